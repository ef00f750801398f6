// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "VendorBf16Layer.hpp"

#include <KokkosKernels_config.h>

#include <cstddef>
#include <stdexcept>

#if defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS) && defined(KOKKOS_ENABLE_CUDA)
#define TERNARYCOUNTER_PERF_CUBLAS_BF16 1
#include <KokkosBlas_tpl_spec.hpp>  // Kokkos Kernels' cuBLAS handle
#endif

namespace TernaryCounter::Perf {

Bf16Matrix bf16_copy(const ExecSpace& space, const ConstMatrix& a, const char* label) {
  const Bf16Matrix b(Kokkos::view_alloc(space, std::string(label), Kokkos::WithoutInitializing),
                     a.extent(0), a.extent(1));
  Kokkos::parallel_for(
      "TernaryCounter::Perf::to_bf16",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>(space, {0, 0}, {a.extent(0), a.extent(1)}),
      KOKKOS_LAMBDA(std::size_t r, std::size_t c) { b(r, c) = narrow<bfloat16>(a(r, c)); });
  return b;
}

struct VendorBf16Layer::Impl {
  ExecSpace space;
  Bf16Matrix x, grad_out, w, y, grad_x;
};

bool VendorBf16Layer::available() {
#if defined(TERNARYCOUNTER_PERF_CUBLAS_BF16)
  return std::is_same_v<ExecSpace, Kokkos::Cuda>;
#else
  return false;
#endif
}

std::string VendorBf16Layer::description() {
#if defined(TERNARYCOUNTER_PERF_CUBLAS_BF16)
  int major = 0, minor = 0, patch = 0;
  cublasGetProperty(MAJOR_VERSION, &major);
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  return "cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(patch) +
         " cublasGemmEx BF16 x BF16, FP32 accumulation (y, grad_x BF16; grad_w FP32)";
#else
  return "none (a CUDA build with cuBLAS only)";
#endif
}

VendorBf16Layer::VendorBf16Layer(const ExecSpace& space, const ConstMatrix& x,
                                 const ConstMatrix& grad_out, const ConstMatrix& w)
    : impl_(std::make_unique<Impl>()) {
  Impl& i = *impl_;
  i.space = space;
  if (!available()) return;
  i.x = bf16_copy(space, x, "TernaryCounter::Perf::bf16_x");
  i.grad_out = bf16_copy(space, grad_out, "TernaryCounter::Perf::bf16_grad_out");
  i.w = bf16_copy(space, w, "TernaryCounter::Perf::bf16_w");
  i.y = Bf16Matrix(Kokkos::view_alloc(space, "TernaryCounter::Perf::bf16_y"), x.extent(0),
                   w.extent(0));
  i.grad_x = Bf16Matrix(Kokkos::view_alloc(space, "TernaryCounter::Perf::bf16_grad_x"), x.extent(0),
                        x.extent(1));
}

VendorBf16Layer::~VendorBf16Layer() = default;

void VendorBf16Layer::step([[maybe_unused]] const Matrix& grad_w) const {
#if defined(TERNARYCOUNTER_PERF_CUBLAS_BF16)
  if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda>) {
    const Impl& i = *impl_;
    const int M = int(i.x.extent(0)), in = int(i.x.extent(1)), out = int(i.w.extent(0));
    const cublasHandle_t handle = KokkosBlas::Impl::CudaBlasSingleton::singleton().handle;
    cublasSetStream(handle, i.space.cuda_stream());
    const float one = 1.0f, zero = 0.0f;
    const auto check = [](cublasStatus_t status, const char* what) {
      if (status != CUBLAS_STATUS_SUCCESS) {
        throw std::runtime_error(std::string("cublasGemmEx (BF16) ") + what +
                                 " failed with status " + std::to_string(int(status)));
      }
    };
    // Row-major products as column-major ones on the transposes.
    // y^T [out, M] = (w as [in, out])^T (x as [in, M]).
    check(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, out, M, in, &one, i.w.data(), CUDA_R_16BF,
                       in, i.x.data(), CUDA_R_16BF, in, &zero, i.y.data(), CUDA_R_16BF, out,
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "forward");
    // grad_x^T [in, M] = (w as [in, out]) (grad_out as [out, M]).
    check(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, in, M, out, &one, i.w.data(), CUDA_R_16BF,
                       in, i.grad_out.data(), CUDA_R_16BF, out, &zero, i.grad_x.data(), CUDA_R_16BF,
                       in, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "backward_input");
    // grad_w^T [in, out] = (x as [in, M]) (grad_out as [out, M])^T.
    check(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_T, in, out, M, &one, i.x.data(), CUDA_R_16BF,
                       in, i.grad_out.data(), CUDA_R_16BF, out, &zero, grad_w.data(), CUDA_R_32F,
                       in, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "weight gradient");
    return;
  }
#endif
  throw std::logic_error("VendorBf16Layer::step: no BF16 GEMM in this build");
}

}  // namespace TernaryCounter::Perf
