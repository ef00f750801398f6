// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Deterministic stochastic-rounding thresholds (SPEC §2).
#pragma once

#include <Kokkos_Macros.hpp>

#include <cstdint>

namespace TernaryCounter {

/// The 32-bit integer hash H(x) of SPEC §2 (wrapping arithmetic).
KOKKOS_INLINE_FUNCTION constexpr std::uint32_t hash_u32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

/// Element index of weight (row, col): (row * in + col) mod 2^32, row being the global row.
KOKKOS_INLINE_FUNCTION constexpr std::uint32_t element_index(std::int64_t global_row,
                                                             std::int64_t in, std::int64_t col) {
  return std::uint32_t(std::uint64_t(global_row) * std::uint64_t(in) + std::uint64_t(col));
}

/// Rounding threshold u in [0, 1): 24 hash bits scaled by 2^-24 (both steps exact in float).
/// The bits are converted as a signed int (the same value): x86 vectorizes only that conversion.
KOKKOS_INLINE_FUNCTION constexpr float uniform01(std::uint32_t seed, std::uint32_t element) {
  return float(std::int32_t(hash_u32(seed ^ hash_u32(element)) & 0xFFFFFFu)) * 0x1p-24f;
}

}  // namespace TernaryCounter
