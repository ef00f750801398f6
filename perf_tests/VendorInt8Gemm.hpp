// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The vendor's int8 GEMM, the peer of the integer path's products in the same run: oneDNN's
// dnnl_gemm_s8s8s32 on host backends where the build found oneDNN (Debian: libdnnl-dev).
// Elsewhere it is unavailable and the driver records no figure for it.
#pragma once

#include "VendorGemm.hpp"

#include <cstdint>
#include <string>

namespace TernaryCounter::Perf {

class VendorInt8Gemm {
 public:
  /// Whether this build and backend have an int8 GEMM to compare with.
  static bool available();
  /// "oneDNN <version> dnnl_gemm_s8s8s32 (<threads> threads)" or why there is none.
  static std::string description();

  /// c [M, N] = a [M, K] b^T ([N, K]), int8 operands, int32 sums (host memory, row-major).
  static void gemm_nt(std::int64_t M, std::int64_t N, std::int64_t K, const std::int8_t* a,
                      const std::int8_t* b, std::int32_t* c);
};

}  // namespace TernaryCounter::Perf
