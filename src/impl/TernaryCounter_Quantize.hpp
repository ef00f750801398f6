// The float side of the integer path (SPEC §6): absmax, the two int8 roundings and their
// dequantization scale, and the streams of the stochastic rounding. Written once, called by every
// integer kernel on every backend.
#pragma once

#include "TernaryCounter_Hash.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

inline constexpr std::uint32_t int8_weight_gradient_tag = 0x9E3779B9u;
inline constexpr std::uint32_t int8_backward_input_tag = 0x7F4A7C15u;
inline constexpr int int8_levels = 127;

/// The key of stream `tag` for a call's seed: u = uniform01(key, elem).
KOKKOS_INLINE_FUNCTION constexpr std::uint32_t stream_key(std::uint32_t seed, std::uint32_t tag) {
  return hash_u32(seed ^ tag);
}

/// |x| for a max that makes any non-finite element +inf (so the max is order-free).
KOKKOS_INLINE_FUNCTION float absmax_term(float x) {
  return Kokkos::isfinite(x) ? Kokkos::fabs(x) : Kokkos::Experimental::infinity_v<float>;
}

/// The dequantization scale of a set with absmax a: NaN if a is not finite, else a / 127.
KOKKOS_INLINE_FUNCTION float dequantization_scale(float a) {
  return Kokkos::isfinite(a) ? a / float(int8_levels) : Kokkos::Experimental::quiet_NaN_v<float>;
}

/// True when the set's values quantize to 0 (absmax 0 or not finite).
KOKKOS_INLINE_FUNCTION bool quantizes_to_zero(float a) {
  return !(a > 0.0f) || !Kokkos::isfinite(a);
}

/// Round to nearest, ties to even (the host's default rounding mode is not assumed).
KOKKOS_INLINE_FUNCTION int round_half_even(float w) {
  const float f = Kokkos::floor(w);
  const float d = w - f;  // exact for |w| <= 127
  int q = int(f);
  if (d > 0.5f || (d == 0.5f && (q & 1) != 0)) ++q;
  return q;
}

/// int8 nearest rounding of x in a set with absmax a (SPEC §6).
KOKKOS_INLINE_FUNCTION int quantize_nearest(float x, float a) {
  if (quantizes_to_zero(a)) return 0;
  return round_half_even((x / a) * float(int8_levels));
}

/// int8 stochastic rounding of x in a set with absmax a, threshold u in [0, 1) (SPEC §6).
KOKKOS_INLINE_FUNCTION int quantize_stochastic(float x, float a, float u) {
  if (quantizes_to_zero(a)) return 0;
  const float w = (x / a) * float(int8_levels);
  const float f = Kokkos::floor(w);
  return int(f) + (u < w - f ? 1 : 0);
}

}  // namespace TernaryCounter::Impl
