// The vendor SGEMM of the comparison path: it forms the dense weight gradient
// grad_w [out, in] = grad_out^T [out, M] * x [M, in] in FP32 from row-major x [M, in] and
// grad_out [M, out]. cuBLAS on CUDA, OpenBLAS on host backends; CMake compiles exactly one of
// VendorGemm_Cuda.cpp / VendorGemm_OpenBLAS.cpp, so the driver never names a vendor.
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
  /// Binds the vendor library to `space` (its stream on a GPU, its thread count on a host).
  explicit VendorGemm(const ExecSpace& space);
  ~VendorGemm();
  VendorGemm(const VendorGemm&) = delete;
  VendorGemm& operator=(const VendorGemm&) = delete;

  /// grad_w = grad_out^T x, enqueued on the space (a host library runs it before returning).
  /// Throws std::invalid_argument on mismatched extents, std::runtime_error on a library error.
  void grad_w(const ConstMatrix& x, const ConstMatrix& grad_out, const Matrix& grad_w) const;

  /// Library, version, precision and threads, for the report.
  std::string description() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The extent and stride checks both implementations share (the libraries take 32-bit sizes).
inline void check_gemm_arguments(const ConstMatrix& x, const ConstMatrix& grad_out,
                                 const Matrix& grad_w) {
  std::ostringstream msg;
  if (x.extent(0) != grad_out.extent(0)) {
    msg << "x has " << x.extent(0) << " rows (M) but grad_out has " << grad_out.extent(0);
  } else if (grad_w.extent(0) != grad_out.extent(1) || grad_w.extent(1) != x.extent(1)) {
    msg << "grad_w is " << grad_w.extent(0) << "x" << grad_w.extent(1) << " but must be "
        << grad_out.extent(1) << "x" << x.extent(1) << " (out x in)";
  } else if (x.stride(0) > INT32_MAX || grad_out.stride(0) > INT32_MAX ||
             grad_w.stride(0) > INT32_MAX || x.extent(0) > INT32_MAX) {
    msg << "a dimension exceeds the 32-bit sizes of the vendor GEMM";
  } else {
    return;
  }
  throw std::invalid_argument("VendorGemm::grad_w: " + msg.str());
}

}  // namespace TernaryCounter::Perf
