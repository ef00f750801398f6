// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Plain host loops of SPEC §3, one row at a time: the oracle the tests compare kernels with.
#pragma once

#include "TernaryCounter_Hash.hpp"
#include "TernaryCounter_PackedState.hpp"
#include "core/TernaryCounter_RowMath.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

namespace TernaryCounter::Reference {

/// S_gg and S_gt of one row in the canonical order, written out without the kernel helpers.
inline RowMath::LanePartial canonical_row_sums(const float* g, const float* t, std::int64_t in) {
  RowMath::LanePartial total{};
  for (std::int64_t start = 0; start < in; start += 256) {
    const std::int64_t end = std::min(in, start + 256);
    float gg[32] = {}, gt[32] = {};
    for (std::int64_t i = start; i < end; ++i) {
      const int j = int((i - start) % 32);
      gg[j] = std::fma(g[i], g[i], gg[j]);
      gt[j] = std::fma(g[i], t[i], gt[j]);
    }
    for (int s = 16; s >= 1; s /= 2) {
      for (int j = 0; j < s; ++j) {
        gg[j] = gg[j] + gg[j + s];
        gt[j] = gt[j] + gt[j + s];
      }
    }
    if (start == 0) {
      total = {gg[0], gt[0]};
    } else {
      total.gg = total.gg + gg[0];
      total.gt = total.gt + gt[0];
    }
  }
  return total;
}

/// Updates row `o` of a host state from its gradient g[in]; returns true if it was skipped.
inline bool update_row(const PackedState<Kokkos::HostSpace>& state, std::int64_t o, const float* g,
                       const UpdateConstants& k) {
  const std::int64_t in = state.in();
  std::vector<int> codes(in);
  std::vector<float> t(in);
  for (std::int64_t i = 0; i < in; ++i) {
    const std::uint32_t word = load_group(&state.codes(o, 3 * (i / 4)));
    codes[i] = group_code(word, int(i % 4));
    t[i] = float(decode_ternary(codes[i], k.C));
  }
  const RowMath::RowScalars r =
      RowMath::row_scalars(k, canonical_row_sums(g, t.data(), in), state.v(o), state.scale(o));
  if (r.skip) return true;
  for (std::int64_t i = 0; i < in; ++i) {
    const float u = uniform01(k.seed, element_index(k.row_offset + o, in, i));
    codes[i] = RowMath::updated_code(k, r, codes[i], g[i], u);
  }
  for (std::int64_t grp = 0; grp < in / 4; ++grp) {
    store_group(
        make_group(codes[4 * grp], codes[4 * grp + 1], codes[4 * grp + 2], codes[4 * grp + 3]),
        &state.codes(o, 3 * grp));
  }
  state.v(o) = r.v_new;
  state.scale(o) = r.s_new;
  return false;
}

/// Dense update from grad_w [out * in] (row-major).
inline UpdateReport update(const PackedState<Kokkos::HostSpace>& state, const float* grad_w,
                           const UpdateParams& params) {
  const UpdateConstants k = make_update_constants(params, state.out(), state.in());
  UpdateReport report;
  for (std::int64_t o = 0; o < state.out(); ++o) {
    report.skipped_rows += update_row(state, o, grad_w + o * state.in(), k);
  }
  return report;
}

/// Update from x [M * in] and grad_out [M * out] (row-major): g[o,i] = fma chain over m.
inline UpdateReport update_from_io(const PackedState<Kokkos::HostSpace>& state, const float* x,
                                   const float* grad_out, std::int64_t M,
                                   const UpdateParams& params) {
  const std::int64_t out = state.out(), in = state.in();
  const UpdateConstants k = make_update_constants(params, out, in);
  UpdateReport report;
  std::vector<float> g(in);
  for (std::int64_t o = 0; o < out; ++o) {
    for (std::int64_t i = 0; i < in; ++i) {
      float acc = 0.0f;
      for (std::int64_t m = 0; m < M; ++m)
        acc = std::fma(grad_out[m * out + o], x[m * in + i], acc);
      g[i] = acc;
    }
    report.skipped_rows += update_row(state, o, g.data(), k);
  }
  return report;
}

}  // namespace TernaryCounter::Reference
