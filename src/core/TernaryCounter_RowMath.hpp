// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The arithmetic of SPEC §3, written once: every kernel and the host reference call these,
// so the order of float operations has one source of truth.
#pragma once

#include "TernaryCounter_Codes.hpp"
#include "TernaryCounter_Params.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::RowMath {

// Canonical row-sum geometry (SPEC §3 step 2).
inline constexpr int sum_block = 256;
inline constexpr int sum_lanes = 32;

KOKKOS_INLINE_FUNCTION constexpr std::int64_t sum_block_count(std::int64_t in) {
  return (in + sum_block - 1) / sum_block;
}

/// Partial sums of one (block, lane) pair: the sequential fma chain over that lane's columns.
struct LanePartial {
  float gg = 0.0f;  ///< sum of g*g
  float gt = 0.0f;  ///< sum of g*t
};

/// Packed groups (4 columns) per canonical block, and how a block's 32 lanes map onto groups:
/// column 4*grp + pos of block b lies in lane 4*(grp % 8) + pos, so the 8 groups
/// b*64 + s + 8r (r = 0..7) hold, in ascending r, the whole chains of lanes 4s .. 4s+3.
inline constexpr int groups_per_block = sum_block / 4;
inline constexpr int group_strides_per_block = sum_lanes / 4;

/// Adds one group's 4 columns, whose ternaries are t, to the chains of its 4 lanes (step r of
/// each chain).
KOKKOS_INLINE_FUNCTION void accumulate_group(LanePartial (&p)[4], const float (&g)[4],
                                             const float (&t)[4]) {
  for (int pos = 0; pos < 4; ++pos) {
    p[pos].gg = Kokkos::fma(g[pos], g[pos], p[pos].gg);
    p[pos].gt = Kokkos::fma(g[pos], t[pos], p[pos].gt);
  }
}

/// The fixed fold tree of a block's 32 lanes: add(j, j + s) for s = 16, 8, 4, 2, 1 and j < s, in
/// that order (lane j then holds lanes j, j + s, ...; the block's total ends in lane 0).
template <class Add>
KOKKOS_INLINE_FUNCTION void fold_tree(const Add& add) {
  for (int s = sum_lanes / 2; s >= 1; s /= 2) {
    for (int j = 0; j < s; ++j) add(j, j + s);
  }
}

/// Folds 32 lane partials in place with the fixed tree; result in p[0].
KOKKOS_INLINE_FUNCTION LanePartial fold_lanes(LanePartial* p) {
  fold_tree([&](int j, int from) {
    p[j].gg = p[j].gg + p[from].gg;
    p[j].gt = p[j].gt + p[from].gt;
  });
  return p[0];
}

/// Adds the next block total in ascending block order (total = block_0, then total + block_k).
KOKKOS_INLINE_FUNCTION void add_block(LanePartial& total, const LanePartial& block, bool first) {
  if (first) {
    total = block;
  } else {
    total.gg = total.gg + block.gg;
    total.gt = total.gt + block.gt;
  }
}

/// Per-row quantities of SPEC §3 steps 3-8.
struct RowScalars {
  float v_new;
  float s_new;
  float ratio;  ///< s_old / s_new
  float cs;     ///< C / s_new
  float denom;
  bool skip;  ///< the row's gradient is not finite: leave the row untouched
};

// A test of the exponent bits rather than isfinite(), which a -ffinite-math-only compilation
// may fold to true: this is what keeps a bad row from corrupting the state (SPEC §3 step 5).
KOKKOS_INLINE_FUNCTION bool is_finite(float x) {
  return (Kokkos::bit_cast<std::uint32_t>(x) & 0x7F800000u) != 0x7F800000u;
}

KOKKOS_INLINE_FUNCTION float max_f(float a, float b) {
  return a > b ? a : b;
}
KOKKOS_INLINE_FUNCTION float min_f(float a, float b) {
  return a < b ? a : b;
}

/// min(max(x, -limit), limit) as SPEC §3 step 9 writes it, for a limit > 0 (a NaN x gives
/// -limit): GPUs take one min and one max instruction (fmin/fmax agree with the compare-selects
/// for such limits) instead of two compares and two selects; hosts keep the compare-selects,
/// which they vectorize.
KOKKOS_INLINE_FUNCTION float clamp_magnitude(float x, float limit) {
  KOKKOS_IF_ON_DEVICE((return Kokkos::fmin(Kokkos::fmax(x, -limit), limit);))
  KOKKOS_IF_ON_HOST((return min_f(max_f(x, -limit), limit);))
}

KOKKOS_INLINE_FUNCTION RowScalars row_scalars(const UpdateConstants& k, LanePartial sums,
                                              float v_old, float s_old) {
  RowScalars r{};
  const float g_sq = sums.gg / k.in_f;
  const float grad_s = sums.gt / k.sqrt_in_f;
  const float beta_v = k.beta * v_old;
  const float omb_g = k.one_minus_beta * g_sq;
  r.v_new = beta_v + omb_g;
  // A non-finite g[i] makes S_gg (a sum of squares) non-finite, so g_sq covers step 5's g test.
  r.skip = !(is_finite(g_sq) && is_finite(grad_s) && is_finite(r.v_new));
  float denom = max_f(Kokkos::sqrt(k.lagged ? v_old : r.v_new), k.eps);
  if (k.clip > 0.0f) {
    const float row_norm = Kokkos::sqrt(g_sq * k.in_f) / denom;
    denom = denom / min_f(k.clip / max_f(row_norm, 1e-30f), 1.0f);
  }
  r.denom = denom;
  const float step = k.lr_scale * grad_s;
  r.s_new = min_f(max_f(s_old - step, 1e-5f), 10.0f);
  r.ratio = s_old / r.s_new;
  r.cs = k.C_f / r.s_new;
  return r;
}

/// n / C truncated toward zero, for integers |n| < 4C (the counter sums of step 10 stay in
/// [-3C, 3C]), in float operations: floor((|n| + 1/2) / C) with the sign of n, since (|n| + 1/2) /
/// C lies at least 1/(2C) from an integer, far beyond the rounding error of the fma.
KOKKOS_INLINE_FUNCTION float truncated_quotient(float n, int C) {
  const float inv_C = 1.0f / float(C);
  const float quotient = Kokkos::floor(Kokkos::fma(Kokkos::fabs(n), inv_C, 0.5f * inv_C));
  return n < 0.0f ? -quotient : quotient;
}

/// Step 9: the counter sum cc of a weight whose old counter is c (as a float), in [-3C, 3C]
/// (the clamp of val keeps it there), as a float (an integer, exact).
KOKKOS_INLINE_FUNCTION float counter_sum_float(const UpdateConstants& k, const RowScalars& r,
                                               float c, float g, float u) {
  const float scaled = (-k.lr) * (g / r.denom);
  const float tick = scaled * r.cs;
  const float carried = c * r.ratio;
  float val = carried + tick;
  val = clamp_magnitude(val, 3.0f * k.C_f);
  const float f = Kokkos::floor(val);
  return u < val - f ? f + 1.0f : f;
}
KOKKOS_INLINE_FUNCTION int counter_sum(const UpdateConstants& k, const RowScalars& r, float c,
                                       float g, float u) {
  return int(counter_sum_float(k, r, c, g, u));
}

/// Step 10: the new code of a weight whose old ternary is t and whose counter sum is cc, in
/// [-3C, 3C], from first = encode(t, 0, C) and cc. With carry = cc / C (truncated) and rem = cc -
/// carry C, an unblocked flip gives encode(t + carry, rem) = encode(t, 0) + cc + carry (C - 1)
/// (lv - C = C - 1), a valid code (|rem| < C, so the SPEC's clamp of rem changes nothing); a
/// blocked one (t + carry beyond +-1) gives the last code 3 lv - 1 upward (rem = C - 1) or 0
/// downward, and there that same sum lies at or past the end it saturates to. So one clamp of the
/// sum is step 10. Every value is a small integer, exact in float: hosts vectorize this as a dozen
/// float operations, without integer multiplies or compare chains (the unit test checks it against
/// the SPEC's wording for every C, t and cc).
KOKKOS_INLINE_FUNCTION float code_after_float(float first, float cc, int C) {
  const float code = Kokkos::fma(truncated_quotient(cc, C), float(C - 1), first + cc);
  return min_f(max_f(code, 0.0f), float(code_count(C) - 1));
}
/// code_after_float on ints (the GPU's code update table is filled from it).
KOKKOS_INLINE_FUNCTION int code_after(int t, int cc, int C) {
  return int(code_after_float(float(encode(t, 0, C)), float(cc), C));
}

/// New code of one weight (SPEC §3 steps 9-10), in float operations (code_after_float).
KOKKOS_INLINE_FUNCTION int updated_code(const UpdateConstants& k, const RowScalars& r, int code,
                                        float g, float u) {
  const int C = k.C, lv = counter_levels(C);
  // encode(decode_ternary(code), 0) and decode_counter(code), as floats.
  const float first =
      float(C - 1) + (code >= lv ? float(lv) : 0.0f) + (code >= 2 * lv ? float(lv) : 0.0f);
  const float c = float(code) - first;
  return int(code_after_float(first, counter_sum_float(k, r, c, g, u), C));
}

}  // namespace TernaryCounter::RowMath
