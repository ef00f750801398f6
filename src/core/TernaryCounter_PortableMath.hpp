// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// exp and log that give the same bits on every backend: built from IEEE multiplies, explicit
// fmas, floor and exponent-field arithmetic only, in a fixed order. The libraries' expf/logf
// are free to round differently on a GPU and a host (CUDA's expf is within 2 ulp, glibc's is
// correctly rounded), and the softmax gradient feeds the counters, so a library exp would make
// the trained codes depend on the backend. Accuracy: a few ulp, ample for a loss.
// No a*b+c is written outside an explicit fma, so contraction (-ffp-contract) changes nothing;
// -ffast-math would (it may reorder and drop the NaN test).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter {

namespace Impl {

/// ln 2 = ln2_hi + ln2_lo, ln2_hi with few enough bits that n * ln2_hi is exact for |n| < 2^11.
constexpr float ln2_hi = 0.693145752f, ln2_lo = 1.42860677e-6f;

/// 2^k for k in [-126, 127], from the exponent field.
KOKKOS_INLINE_FUNCTION float exp2_int(int k) {
  return Kokkos::bit_cast<float>(std::uint32_t(k + 127) << 23);
}

/// c[0] + x (c[1] + x (c[2] + ...)): Horner's rule with fmas, from the highest coefficient down.
template <int N>
KOKKOS_INLINE_FUNCTION float horner(const float (&c)[N], float x) {
  float p = c[N - 1];
  for (int i = N - 2; i >= 0; --i) p = Kokkos::fma(p, x, c[i]);
  return p;
}

}  // namespace Impl

/// e^x; 0 below -103 (where float's e^x is at most a few subnormal ulp), +inf above ln(FLT_MAX).
KOKKOS_INLINE_FUNCTION float portable_exp(float x) {
  if (x != x) return x;
  if (x < -103.0f) return 0.0f;
  if (x > 88.7228394f) return Kokkos::bit_cast<float>(std::uint32_t(0x7F800000));
  // x = n ln2 + r, |r| <= ln2 / 2.
  const float n = Kokkos::floor(Kokkos::fma(x, 1.44269504f, 0.5f));
  float r = Kokkos::fma(-n, Impl::ln2_hi, x);
  r = Kokkos::fma(-n, Impl::ln2_lo, r);
  // e^r by its Taylor series to r^7 (error below 1e-8 relative on |r| <= 0.35).
  const float taylor[] = {1.0f,         1.0f,          0.5f,          1.0f / 6.0f,
                          1.0f / 24.0f, 1.0f / 120.0f, 1.0f / 720.0f, 1.0f / 5040.0f};
  const float p = Impl::horner(taylor, r);
  // 2^n in two factors, so that n down to -150 (subnormal results) needs no special case.
  const int k = int(n), half = k / 2;
  return p * Impl::exp2_int(half) * Impl::exp2_int(k - half);
}

/// ln x for finite x > 0 of normal range (the softmax's sum is at least 1); other inputs go to
/// Kokkos::log (not reached by the training loss).
KOKKOS_INLINE_FUNCTION float portable_log(float x) {
  if (!(x >= 1.17549435e-38f) || x > 3.40282347e38f) return Kokkos::log(x);
  // x = m 2^e with m in [sqrt(1/2), sqrt(2)).
  const std::uint32_t bits = Kokkos::bit_cast<std::uint32_t>(x);
  int e = int(bits >> 23) - 127;
  float m = Kokkos::bit_cast<float>((bits & 0x007FFFFFu) | 0x3F800000u);
  if (m > 1.41421356f) {
    m = m * 0.5f;
    e += 1;
  }
  // ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172: odd series to s^11.
  const float s = (m - 1.0f) / (m + 1.0f);
  const float s2 = s * s;
  const float odd[] = {1.0f, 1.0f / 3.0f, 1.0f / 5.0f, 1.0f / 7.0f, 1.0f / 9.0f, 1.0f / 11.0f};
  const float q = Impl::horner(odd, s2);
  const float log_m = 2.0f * s * q;
  return Kokkos::fma(float(e), Impl::ln2_hi, Kokkos::fma(float(e), Impl::ln2_lo, log_m));
}

}  // namespace TernaryCounter
