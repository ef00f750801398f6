// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The 16-bit floating-point element types the calls take and write: bfloat16 and float16, two
// bytes each, bit-compatible with torch.bfloat16 / torch.float16, __nv_bfloat16 / __half and the
// IEEE 754 binary16 format. They are storage types: every call widens them to float (exactly:
// each 16-bit value is a float), computes SPEC's float results and, for a 16-bit output, rounds
// those to nearest, ties to even (as torch's .to(dtype) does). Kokkos' own half_t and bhalf_t
// are float on host-only builds, so they cannot describe a 2-byte tensor there.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace TernaryCounter {

/// bfloat16: float's sign, 8-bit exponent and top 7 mantissa bits.
struct bfloat16 {
  std::uint16_t bits;
};

/// float16: IEEE 754 binary16 (5-bit exponent, 10-bit mantissa).
struct float16 {
  std::uint16_t bits;
};

/// The element types of the calls' 16-bit inputs and outputs.
template <class T>
concept HalfFloat = std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>;

KOKKOS_INLINE_FUNCTION float widen(float v) {
  return v;
}

/// The float of a bfloat16 (exact).
KOKKOS_INLINE_FUNCTION float widen(bfloat16 v) {
  return Kokkos::bit_cast<float>(std::uint32_t(v.bits) << 16);
}

/// The float of a float16 (exact: every binary16 value, subnormals, infinities and NaNs).
KOKKOS_INLINE_FUNCTION float widen(float16 v) {
  const std::uint32_t sign = std::uint32_t(v.bits & 0x8000u) << 16;
  const std::uint32_t exponent = (v.bits >> 10) & 0x1Fu, mantissa = v.bits & 0x3FFu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = float(mantissa) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 0x1Fu) {  // infinity or NaN (the payload kept)
    return Kokkos::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  }
  return Kokkos::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

/// `v` rounded to T: to nearest, ties to even; NaN stays NaN (quiet).
template <class T>
KOKKOS_INLINE_FUNCTION T narrow(float v);

template <>
KOKKOS_INLINE_FUNCTION float narrow<float>(float v) {
  return v;
}

template <>
KOKKOS_INLINE_FUNCTION bfloat16 narrow<bfloat16>(float v) {
  const std::uint32_t x = Kokkos::bit_cast<std::uint32_t>(v);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return {std::uint16_t((x >> 16) | 0x40u)};
  return {std::uint16_t((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16)};
}

template <>
KOKKOS_INLINE_FUNCTION float16 narrow<float16>(float v) {
  const std::uint32_t bits = Kokkos::bit_cast<std::uint32_t>(v);
  const std::uint16_t sign = std::uint16_t((bits >> 16) & 0x8000u);
  const std::uint32_t x = bits & 0x7FFFFFFFu;
  if (x > 0x7F800000u) return {std::uint16_t(sign | 0x7E00u | ((x >> 13) & 0x3FFu))};  // NaN
  if (x >= 0x477FF000u) return {std::uint16_t(sign | 0x7C00u)};  // >= 65520: infinity
  if (x >= 0x38800000u) {                                        // normal (>= 2^-14)
    const std::uint32_t r = x - (112u << 23);
    return {std::uint16_t(sign | ((r + 0x0FFFu + ((r >> 13) & 1u)) >> 13))};
  }
  if (x <= 0x33000000u) return {sign};  // <= 2^-25: zero (2^-25 itself ties to even zero)
  // Subnormal: the mantissa with its hidden bit, in units of 2^-24, rounded to nearest even.
  const std::uint32_t mantissa = (x & 0x7FFFFFu) | 0x800000u;
  const int shift = 126 - int(x >> 23);
  const std::uint32_t q = mantissa >> shift, rest = mantissa & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  return {std::uint16_t(sign | (q + ((rest > half || (rest == half && (q & 1u))) ? 1u : 0u)))};
}

}  // namespace TernaryCounter
