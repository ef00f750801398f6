// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The vendor's int8 GEMM, the peer of the integer path's products in the same run: oneDNN's
// dnnl_gemm_s8s8s32 on host backends where the build found oneDNN (Debian: libdnnl-dev), cuBLAS'
// int8 GEMM (cublasGemmEx, int32 sums on tensor cores) on CUDA. Elsewhere it is unavailable and
// the driver records no figure for it.
#pragma once

#include "VendorGemm.hpp"

#include <cstdint>
#include <string>

namespace TernaryCounter::Perf {

using Int8Matrix = Kokkos::View<std::int8_t**, Kokkos::LayoutRight, MemSpace>;
using Int32Matrix = Kokkos::View<std::int32_t**, Kokkos::LayoutRight, MemSpace>;

class VendorInt8Gemm {
 public:
  /// Whether this build and backend have an int8 GEMM to compare with.
  static bool available();
  /// "<library> <version> <call>" or why there is none.
  static std::string description();

  /// c [M, N] = a [M, K] b^T ([N, K]), int8 operands, int32 sums, enqueued on `space` (a host
  /// library runs it before returning).
  static void gemm_nt(const ExecSpace& space, const Int8Matrix& a, const Int8Matrix& b,
                      const Int32Matrix& c);
};

}  // namespace TernaryCounter::Perf
