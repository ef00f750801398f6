// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Counter codes (SPEC §1): a 6-bit code holds a ternary weight and a residual counter;
// four codes pack into three bytes.
#pragma once

#include <Kokkos_Macros.hpp>

#include <cstdint>

namespace TernaryCounter {

inline constexpr int min_counter_depth = 2;
// 3 * (2C - 1) codes must fit in 6 bits.
inline constexpr int max_counter_depth = 11;
inline constexpr int codes_per_group = 4;
inline constexpr int bytes_per_group = 3;

/// Number of counter levels per ternary value: lv = 2C - 1.
KOKKOS_INLINE_FUNCTION constexpr int counter_levels(int C) {
  return 2 * C - 1;
}

/// Number of valid codes, [0, 3 * lv).
KOKKOS_INLINE_FUNCTION constexpr int code_count(int C) {
  return 3 * counter_levels(C);
}

KOKKOS_INLINE_FUNCTION constexpr int encode(int ternary, int counter, int C) {
  return (ternary + 1) * counter_levels(C) + counter + (C - 1);
}

// Decoding compares instead of dividing (integer division is slow on every backend); both
// equal k / lv - 1 and k % lv - (C - 1) for every valid code k < 3 lv.
KOKKOS_INLINE_FUNCTION constexpr int decode_ternary(int code, int C) {
  const int lv = counter_levels(C);
  return int(code >= lv) + int(code >= 2 * lv) - 1;
}

KOKKOS_INLINE_FUNCTION constexpr int decode_counter(int code, int C) {
  return code - (decode_ternary(code, C) + 1) * counter_levels(C) - (C - 1);
}

/// decode_ternary as a float, given lv = counter_levels(C): two compares and two selects (no
/// division and no int-to-float conversion, both slow on GPUs).
KOKKOS_INLINE_FUNCTION constexpr float ternary_float(int code, int lv) {
  return code >= 2 * lv ? 1.0f : (code >= lv ? 0.0f : -1.0f);
}

/// The 24-bit little-endian word k0 | k1 << 6 | k2 << 12 | k3 << 18 of one group.
KOKKOS_INLINE_FUNCTION constexpr std::uint32_t load_group(const std::uint8_t* bytes) {
  return std::uint32_t(bytes[0]) | std::uint32_t(bytes[1]) << 8 | std::uint32_t(bytes[2]) << 16;
}

KOKKOS_INLINE_FUNCTION constexpr void store_group(std::uint32_t word, std::uint8_t* bytes) {
  bytes[0] = std::uint8_t(word);
  bytes[1] = std::uint8_t(word >> 8);
  bytes[2] = std::uint8_t(word >> 16);
}

/// Code `lane` (0..3) of a group word.
KOKKOS_INLINE_FUNCTION constexpr int group_code(std::uint32_t word, int lane) {
  return int((word >> (6 * lane)) & 63u);
}

KOKKOS_INLINE_FUNCTION constexpr std::uint32_t make_group(int k0, int k1, int k2, int k3) {
  return std::uint32_t(k0) | std::uint32_t(k1) << 6 | std::uint32_t(k2) << 12 |
         std::uint32_t(k3) << 18;
}

}  // namespace TernaryCounter
