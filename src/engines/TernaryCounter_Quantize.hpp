// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The float side of the integer path (SPEC §6): absmax, the two int8 roundings and their
// dequantization scale, and the streams of the stochastic rounding. Written once, called by every
// integer kernel on every backend; branch-free, so host loops over a row vectorize.
#pragma once

#include "TernaryCounter_Hash.hpp"

#include <Kokkos_Core.hpp>

#include <cfloat>
#include <cstdint>

namespace TernaryCounter::Impl {

inline constexpr std::uint32_t int8_weight_gradient_tag = 0x9E3779B9u;
inline constexpr std::uint32_t int8_backward_input_tag = 0x7F4A7C15u;
inline constexpr float int8_levels = 127.0f;

/// The key of stream `tag` for a call's seed: u = uniform01(key, elem).
KOKKOS_INLINE_FUNCTION constexpr std::uint32_t stream_key(std::uint32_t seed, std::uint32_t tag) {
  return hash_u32(seed ^ tag);
}

/// |x|, or +inf for a non-finite x: a max of these is order-free and says +inf when any element
/// of the set is not finite.
KOKKOS_INLINE_FUNCTION float absmax_term(float x) {
  const float a = Kokkos::fabs(x);
  return a <= FLT_MAX ? a : Kokkos::Experimental::infinity_v<float>;
}

/// absmax_term(x) as the bits of a non-negative float: these order as unsigned integers, so a
/// row's absmax is an integer max (which compilers vectorize; a float max they may not).
KOKKOS_INLINE_FUNCTION std::uint32_t absmax_term_bits(float x) {
  const std::uint32_t bits = Kokkos::bit_cast<std::uint32_t>(x) & 0x7FFFFFFFu;
  return bits < 0x7F800000u ? bits : 0x7F800000u;
}
KOKKOS_INLINE_FUNCTION float absmax_from_bits(std::uint32_t bits) {
  return Kokkos::bit_cast<float>(bits);
}

/// max of two absmax terms (neither is NaN).
KOKKOS_INLINE_FUNCTION float absmax_join(float a, float b) {
  return b > a ? b : a;
}

/// How the values of a set with absmax `a` quantize: to 0 when a is 0 or not finite, else by
/// (x / a) * 127.
struct QuantizeRule {
  float divisor = 1.0f;  ///< a, or 1 where every value quantizes to 0 (no division by 0 or inf)
  bool zero = true;

  KOKKOS_INLINE_FUNCTION explicit QuantizeRule(float a) {
    zero = !(a > 0.0f && a <= FLT_MAX);
    divisor = zero ? 1.0f : a;
  }
  /// w = (x / a) * 127, in [-127, 127]; 0 where the set quantizes to 0.
  KOKKOS_INLINE_FUNCTION float level(float x) const {
    const float w = (x / divisor) * int8_levels;
    return zero ? 0.0f : w;
  }
  /// Nearest rounding, ties to even (the host's rounding mode is not assumed).
  KOKKOS_INLINE_FUNCTION int nearest(float x) const {
    const float w = level(x);
    const float f = Kokkos::floor(w);
    const float d = w - f;
    const int i = int(f);
    return i + (int(d > 0.5f) | (int(d == 0.5f) & i & 1));
  }
  /// Stochastic rounding with threshold u in [0, 1): floor(w) + (u < w - floor(w)).
  KOKKOS_INLINE_FUNCTION int stochastic(float x, float u) const {
    const float w = level(x);
    const float f = Kokkos::floor(w);
    return int(f) + int(u < w - f);
  }
};

/// The dequantization scale of a set with absmax a: NaN if a is not finite, else a / 127.
KOKKOS_INLINE_FUNCTION float dequantization_scale(float a) {
  return a <= FLT_MAX ? a / int8_levels : Kokkos::Experimental::quiet_NaN_v<float>;
}

}  // namespace TernaryCounter::Impl
