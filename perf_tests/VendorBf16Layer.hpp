// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The step a user would run instead of a ternary layer on a GPU: a dense layer's three GEMMs on
// BF16 tensor cores with FP32 accumulation (cuBLAS, cublasGemmEx): y = x W^T and
// grad_x = grad_out W in BF16, grad_w = grad_out^T x in FP32 (for the optimizer). CUDA builds with
// cuBLAS only; elsewhere unavailable, and the driver records no figure for it.
#pragma once

#include "VendorGemm.hpp"

#include <TernaryCounter_HalfFloats.hpp>

#include <memory>
#include <string>

namespace TernaryCounter::Perf {

using Bf16Matrix = Kokkos::View<bfloat16**, Kokkos::LayoutRight, MemSpace>;

/// `a` rounded to bfloat16 (to nearest, ties to even), as a training script's bf16 tensors hold
/// it; enqueued on `space`.
Bf16Matrix bf16_copy(const ExecSpace& space, const ConstMatrix& a, const char* label);

class VendorBf16Layer {
 public:
  static bool available();
  /// "cuBLAS <version> cublasGemmEx BF16 x BF16 -> ..." or why there is none.
  static std::string description();

  /// BF16 copies of x [M, in], grad_out [M, out] and w [out, in] (rounded to nearest even), and
  /// BF16 outputs y [M, out] and grad_x [M, in].
  VendorBf16Layer(const ExecSpace& space, const ConstMatrix& x, const ConstMatrix& grad_out,
                  const ConstMatrix& w);
  ~VendorBf16Layer();
  VendorBf16Layer(const VendorBf16Layer&) = delete;
  VendorBf16Layer& operator=(const VendorBf16Layer&) = delete;

  /// forward, backward_input and the weight gradient into grad_w [out, in] (FP32), enqueued on
  /// the space.
  void step(const Matrix& grad_w) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace TernaryCounter::Perf
