// VendorGemm on host backends: OpenBLAS cblas_sgemm, using as many threads as the Kokkos
// execution space so both sides of the comparison run on the same cores.
#include "VendorGemm.hpp"

#include <cblas.h>

#include <string>

namespace TernaryCounter::Perf {

static_assert(Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible,
              "VendorGemm_OpenBLAS.cpp serves host execution spaces only");

struct VendorGemm::Impl {
  ExecSpace space;
};

VendorGemm::VendorGemm(const ExecSpace& space) : impl_(std::make_unique<Impl>(Impl{space})) {
  openblas_set_num_threads(space.concurrency());
}

VendorGemm::~VendorGemm() = default;

void VendorGemm::grad_w(const ConstMatrix& x, const ConstMatrix& grad_out,
                        const Matrix& grad_w) const {
  check_gemm_arguments(x, grad_out, grad_w);
  const int out = int(grad_w.extent(0)), in = int(grad_w.extent(1)), m = int(x.extent(0));
  // The inputs may still be written by kernels of the space; OpenBLAS runs outside Kokkos.
  impl_->space.fence("TernaryCounter::Perf::VendorGemm::before_sgemm");
  // Row-major C [out, in] = A^T B with A = grad_out [M, out] and B = x [M, in].
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, m, 1.0f, grad_out.data(),
              int(grad_out.stride(0)), x.data(), int(x.stride(0)), 0.0f, grad_w.data(),
              int(grad_w.stride(0)));
}

std::string VendorGemm::description() const {
  return "OpenBLAS cblas_sgemm FP32, " + std::to_string(openblas_get_num_threads()) + " threads (" +
         openblas_get_config() + ")";
}

}  // namespace TernaryCounter::Perf
