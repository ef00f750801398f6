// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "VendorInt8Gemm.hpp"

#include <stdexcept>

#if defined(TERNARYCOUNTER_HAVE_DNNL)
#include <dnnl.h>
#endif

namespace TernaryCounter::Perf {

bool VendorInt8Gemm::available() {
#if defined(TERNARYCOUNTER_HAVE_DNNL)
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;
#else
  return false;
#endif
}

std::string VendorInt8Gemm::description() {
#if defined(TERNARYCOUNTER_HAVE_DNNL)
  if (!available()) return "none (oneDNN runs on the host; this backend's memory is not)";
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + " dnnl_gemm_s8s8s32 (" +
         std::string(v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "threads") + ")";
#else
  return "none (configured without oneDNN: install libdnnl-dev)";
#endif
}

void VendorInt8Gemm::gemm_nt([[maybe_unused]] std::int64_t M, [[maybe_unused]] std::int64_t N,
                             [[maybe_unused]] std::int64_t K, [[maybe_unused]] const std::int8_t* a,
                             [[maybe_unused]] const std::int8_t* b,
                             [[maybe_unused]] std::int32_t* c) {
#if defined(TERNARYCOUNTER_HAVE_DNNL)
  const std::int32_t no_offset = 0;
  const dnnl_status_t status =
      dnnl_gemm_s8s8s32('N', 'T', 'F', M, N, K, 1.0f, a, K, 0, b, K, 0, 0.0f, c, N, &no_offset);
  if (status != dnnl_success) {
    throw std::runtime_error("dnnl_gemm_s8s8s32 failed with status " + std::to_string(int(status)));
  }
#else
  throw std::logic_error("VendorInt8Gemm::gemm_nt: no int8 GEMM in this build");
#endif
}

}  // namespace TernaryCounter::Perf
