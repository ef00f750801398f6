// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The vendor SGEMM of the comparison paths, in FP32 on row-major Views: the dense weight gradient
// grad_w [out, in] = grad_out^T x, and the dense layer's forward (x W^T) and input gradient
// (grad_out W). One implementation (VendorGemm.cpp) on KokkosBlas::gemm, which calls the BLAS
// TPL Kokkos Kernels was built with (cuBLAS on CUDA, rocBLAS on HIP, OpenBLAS on host
// backends), so the driver never names a vendor.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

namespace TernaryCounter::Perf {

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = ExecSpace::memory_space;
using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, MemSpace>;
using ConstMatrix = Kokkos::View<const float**, Kokkos::LayoutRight, MemSpace>;

class VendorGemm {
 public:
  /// Runs on `space` (KokkosBlas binds the TPL to its stream; a host BLAS gets its thread count).
  explicit VendorGemm(const ExecSpace& space);
  ~VendorGemm();
  VendorGemm(const VendorGemm&) = delete;
  VendorGemm& operator=(const VendorGemm&) = delete;

  /// c = op(a) op(b), op transposing when the flag says so, enqueued on the space (a host
  /// library runs it before returning). Throws std::invalid_argument on mismatched extents,
  /// std::runtime_error on a library error (KokkosBlas' TPL checks).
  void gemm(bool transpose_a, bool transpose_b, const ConstMatrix& a, const ConstMatrix& b,
            const Matrix& c) const;

  /// grad_w [out, in] = grad_out^T x.
  void grad_w(const ConstMatrix& x, const ConstMatrix& grad_out, const Matrix& grad_w) const {
    gemm(true, false, grad_out, x, grad_w);
  }
  /// y [M, out] = x W^T: a dense layer's forward.
  void forward(const ConstMatrix& x, const ConstMatrix& w, const Matrix& y) const {
    gemm(false, true, x, w, y);
  }
  /// grad_x [M, in] = grad_out W: a dense layer's input gradient.
  void backward_input(const ConstMatrix& grad_out, const ConstMatrix& w,
                      const Matrix& grad_x) const {
    gemm(false, false, grad_out, w, grad_x);
  }

  /// Waits until a host BLAS's worker threads have gone to sleep: OpenBLAS's threads poll for
  /// work for 2^28 clock ticks (~0.1 s) after each call, on the cores that Kokkos' threads need
  /// next. The driver calls it before timing this library's calls after vendor calls, which
  /// would otherwise share their cores with spinning BLAS threads. No-op on GPUs.
  void settle() const;

  /// "KokkosBlas::gemm (TPL: <library, version, precision, threads>)", for the report.
  std::string description() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Rows and columns of op(a).
inline std::int64_t op_rows(bool transpose, const ConstMatrix& a) {
  return std::int64_t(transpose ? a.extent(1) : a.extent(0));
}
inline std::int64_t op_cols(bool transpose, const ConstMatrix& a) {
  return std::int64_t(transpose ? a.extent(0) : a.extent(1));
}

/// Extent and stride checks before KokkosBlas::gemm (the TPLs take 32-bit sizes).
inline void check_gemm_arguments(bool transpose_a, bool transpose_b, const ConstMatrix& a,
                                 const ConstMatrix& b, const Matrix& c) {
  std::ostringstream msg;
  if (op_cols(transpose_a, a) != op_rows(transpose_b, b)) {
    msg << "op(a) has " << op_cols(transpose_a, a) << " columns but op(b) has "
        << op_rows(transpose_b, b) << " rows";
  } else if (std::int64_t(c.extent(0)) != op_rows(transpose_a, a) ||
             std::int64_t(c.extent(1)) != op_cols(transpose_b, b)) {
    msg << "c is " << c.extent(0) << "x" << c.extent(1) << " but must be "
        << op_rows(transpose_a, a) << "x" << op_cols(transpose_b, b);
  } else if (a.stride(0) > INT32_MAX || b.stride(0) > INT32_MAX || c.stride(0) > INT32_MAX ||
             a.extent(0) > INT32_MAX || a.extent(1) > INT32_MAX || b.extent(1) > INT32_MAX) {
    msg << "a dimension exceeds the 32-bit sizes of the vendor GEMM";
  } else {
    return;
  }
  throw std::invalid_argument("VendorGemm::gemm: " + msg.str());
}

}  // namespace TernaryCounter::Perf
