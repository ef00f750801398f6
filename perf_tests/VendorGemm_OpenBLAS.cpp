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

void VendorGemm::gemm(bool transpose_a, bool transpose_b, const ConstMatrix& a,
                      const ConstMatrix& b, const Matrix& c) const {
  check_gemm_arguments(transpose_a, transpose_b, a, b, c);
  // The inputs may still be written by kernels of the space; OpenBLAS runs outside Kokkos.
  impl_->space.fence("TernaryCounter::Perf::VendorGemm::before_sgemm");
  const auto op = [](bool transpose) { return transpose ? CblasTrans : CblasNoTrans; };
  cblas_sgemm(CblasRowMajor, op(transpose_a), op(transpose_b), int(c.extent(0)), int(c.extent(1)),
              int(op_cols(transpose_a, a)), 1.0f, a.data(), int(a.stride(0)), b.data(),
              int(b.stride(0)), 0.0f, c.data(), int(c.stride(0)));
}

std::string VendorGemm::description() const {
  return "OpenBLAS cblas_sgemm FP32, " + std::to_string(openblas_get_num_threads()) + " threads (" +
         openblas_get_config() + ")";
}

}  // namespace TernaryCounter::Perf
