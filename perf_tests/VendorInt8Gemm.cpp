// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "VendorInt8Gemm.hpp"

#include <KokkosKernels_config.h>

#include <stdexcept>

#if defined(TERNARYCOUNTER_HAVE_DNNL)
#include <dnnl.h>
#endif
#if defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS) && defined(KOKKOS_ENABLE_CUDA)
#define TERNARYCOUNTER_PERF_CUBLAS_INT8 1
#include <KokkosBlas_tpl_spec.hpp>  // Kokkos Kernels' cuBLAS handle
#endif

namespace TernaryCounter::Perf {

namespace {

constexpr bool cublas_space() {
#if defined(TERNARYCOUNTER_PERF_CUBLAS_INT8)
  return std::is_same_v<ExecSpace, Kokkos::Cuda>;
#else
  return false;
#endif
}

}  // namespace

bool VendorInt8Gemm::available() {
#if defined(TERNARYCOUNTER_HAVE_DNNL)
  if (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible) return true;
#endif
  return cublas_space();
}

std::string VendorInt8Gemm::description() {
#if defined(TERNARYCOUNTER_PERF_CUBLAS_INT8)
  if constexpr (cublas_space()) {
    int major = 0, minor = 0, patch = 0;
    cublasGetProperty(MAJOR_VERSION, &major);
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    return "cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." +
           std::to_string(patch) + " cublasGemmEx int8 x int8 -> int32 (CUBLAS_COMPUTE_32I)";
  }
#endif
#if defined(TERNARYCOUNTER_HAVE_DNNL)
  if (!available()) return "none (oneDNN runs on the host; this backend's memory is not)";
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + " dnnl_gemm_s8s8s32 (" +
         std::string(v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "threads") + ")";
#else
  return "none (no oneDNN on this host backend: install libdnnl-dev; or a GPU without one)";
#endif
}

void VendorInt8Gemm::gemm_nt(const ExecSpace& space, const Int8Matrix& a, const Int8Matrix& b,
                             const Int32Matrix& c) {
  const std::int64_t M = a.extent(0), N = b.extent(0), K = a.extent(1);
  if (std::int64_t(b.extent(1)) != K || std::int64_t(c.extent(0)) != M ||
      std::int64_t(c.extent(1)) != N) {
    throw std::invalid_argument("VendorInt8Gemm::gemm_nt: extents do not match");
  }
#if defined(TERNARYCOUNTER_PERF_CUBLAS_INT8)
  if constexpr (cublas_space()) {
    // Column-major c^T [N, M] = (b as [K, N])^T (a as [K, M]): the "TN" form of the int8
    // tensor-core kernels.
    const cublasHandle_t handle = KokkosBlas::Impl::CudaBlasSingleton::singleton().handle;
    cublasSetStream(handle, space.cuda_stream());
    const std::int32_t one = 1, zero = 0;
    const cublasStatus_t status =
        cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, int(N), int(M), int(K), &one, b.data(),
                     CUDA_R_8I, int(K), a.data(), CUDA_R_8I, int(K), &zero, c.data(), CUDA_R_32I,
                     int(N), CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS) {
      throw std::runtime_error("cublasGemmEx (int8) failed with status " +
                               std::to_string(int(status)));
    }
    return;
  }
#endif
#if defined(TERNARYCOUNTER_HAVE_DNNL)
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible) {
    space.fence("TernaryCounter::Perf::VendorInt8Gemm::before_gemm");
    const std::int32_t no_offset = 0;
    const dnnl_status_t status = dnnl_gemm_s8s8s32('N', 'T', 'F', M, N, K, 1.0f, a.data(), K, 0,
                                                   b.data(), K, 0, 0.0f, c.data(), N, &no_offset);
    if (status != dnnl_success) {
      throw std::runtime_error("dnnl_gemm_s8s8s32 failed with status " +
                               std::to_string(int(status)));
    }
    return;
  }
#endif
  (void)space;
  throw std::logic_error("VendorInt8Gemm::gemm_nt: no int8 GEMM in this build");
}

}  // namespace TernaryCounter::Perf
