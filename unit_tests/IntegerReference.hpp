// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Plain host loops of SPEC §6 (the integer path): the oracle the tests and the int_* case
// generator compare the integer kernels with. Written from the SPEC's text, sharing nothing with
// the kernels but the hash and the row update of §3 (Reference.hpp).
#pragma once

#include "Reference.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace TernaryCounter::Reference::Int8 {

inline constexpr std::uint32_t tag_w = 0x9E3779B9u;
inline constexpr std::uint32_t tag_b = 0x7F4A7C15u;

/// absmax of `n` values `at(j)`: +inf if any is not finite.
template <class At>
float absmax(std::int64_t n, At at) {
  float a = 0.0f;
  for (std::int64_t j = 0; j < n; ++j) {
    const float v = at(j);
    if (!std::isfinite(v)) return std::numeric_limits<float>::infinity();
    a = std::max(a, std::fabs(v));
  }
  return a;
}

/// An output's NaN is the quiet NaN 0x7FC00000 on every backend.
inline float canonical_nan(float v) {
  return std::isnan(v) ? std::numeric_limits<float>::quiet_NaN() : v;
}

inline float scale_of(float a) {
  return std::isfinite(a) ? a / 127.0f : std::numeric_limits<float>::quiet_NaN();
}

inline int nearest(float x, float a) {
  if (!std::isfinite(a) || a == 0.0f) return 0;
  return int(std::nearbyint((x / a) * 127.0f));  // the default rounding mode: half to even
}

inline int stochastic(float x, float a, float u) {
  if (!std::isfinite(a) || a == 0.0f) return 0;
  const float w = (x / a) * 127.0f;
  const float f = std::floor(w);
  return int(f) + (u < w - f ? 1 : 0);
}

inline float stream_u(std::uint32_t seed, std::uint32_t tag, std::uint64_t elem) {
  return uniform01(hash_u32(seed ^ tag), std::uint32_t(elem));
}

inline int ternary(const PackedState<Kokkos::HostSpace>& state, std::int64_t o, std::int64_t i) {
  const std::uint32_t word = load_group(&state.codes(o, 3 * (i / 4)));
  return decode_ternary(group_code(word, int(i % 4)), state.C);
}

/// y [M * out] of x [M * in].
inline std::vector<float> forward(const PackedState<Kokkos::HostSpace>& state, const float* x,
                                  std::int64_t M) {
  const std::int64_t in = state.in(), out = state.out();
  std::vector<float> y(M * out);
  std::vector<int> q(in);
  for (std::int64_t m = 0; m < M; ++m) {
    const float a = absmax(in, [&](std::int64_t i) { return x[m * in + i]; });
    for (std::int64_t i = 0; i < in; ++i) q[i] = nearest(x[m * in + i], a);
    const float s = scale_of(a);
    for (std::int64_t o = 0; o < out; ++o) {
      std::int64_t sum = 0;
      for (std::int64_t i = 0; i < in; ++i) sum += q[i] * ternary(state, o, i);
      y[m * out + o] = canonical_nan((float(std::int32_t(sum)) * s) * state.scale(o));
    }
  }
  return y;
}

/// grad_x [M * in] of grad_out [M * out].
inline std::vector<float> backward_input(const PackedState<Kokkos::HostSpace>& state,
                                         const float* grad_out, std::int64_t M,
                                         std::uint32_t seed) {
  const std::int64_t in = state.in(), out = state.out();
  std::vector<float> grad_x(M * in);
  std::vector<float> h(out);
  std::vector<int> q(out);
  for (std::int64_t m = 0; m < M; ++m) {
    for (std::int64_t o = 0; o < out; ++o) h[o] = grad_out[m * out + o] * state.scale(o);
    const float b = absmax(out, [&](std::int64_t o) { return h[o]; });
    for (std::int64_t o = 0; o < out; ++o) {
      q[o] = stochastic(h[o], b, stream_u(seed, tag_b, std::uint64_t(m) * out + o));
    }
    const float r = scale_of(b);
    for (std::int64_t i = 0; i < in; ++i) {
      std::int64_t sum = 0;
      for (std::int64_t o = 0; o < out; ++o) sum += q[o] * ternary(state, o, i);
      grad_x[m * in + i] = canonical_nan(float(std::int32_t(sum)) * r);
    }
  }
  return grad_x;
}

/// The int8 weight gradient g [out * in] of SPEC §6 (row o of the state is global row
/// params.row_offset + o).
inline std::vector<float> weight_gradient(std::int64_t out, std::int64_t in, const float* x,
                                          const float* grad_out, std::int64_t M,
                                          const UpdateParams& params) {
  std::vector<int> xq(M * in), gq(M * out);
  std::vector<float> sx(in), sg(out);
  for (std::int64_t i = 0; i < in; ++i) {
    const float a = absmax(M, [&](std::int64_t m) { return x[m * in + i]; });
    for (std::int64_t m = 0; m < M; ++m) xq[m * in + i] = nearest(x[m * in + i], a);
    sx[i] = scale_of(a);
  }
  for (std::int64_t o = 0; o < out; ++o) {
    const float a = absmax(M, [&](std::int64_t m) { return grad_out[m * out + o]; });
    const std::uint64_t row = std::uint64_t(params.row_offset + o);
    for (std::int64_t m = 0; m < M; ++m) {
      gq[m * out + o] =
          stochastic(grad_out[m * out + o], a, stream_u(params.seed, tag_w, row * M + m));
    }
    sg[o] = scale_of(a);
  }
  std::vector<float> g(out * in);
  for (std::int64_t o = 0; o < out; ++o) {
    for (std::int64_t i = 0; i < in; ++i) {
      std::int64_t sum = 0;
      for (std::int64_t m = 0; m < M; ++m) sum += gq[m * out + o] * xq[m * in + i];
      g[o * in + i] = float(std::int32_t(sum)) * (sg[o] * sx[i]);
    }
  }
  return g;
}

/// update_from_io in int8: the gradient above, then §3 steps 2-11 row by row.
inline UpdateReport update_from_io(const PackedState<Kokkos::HostSpace>& state, const float* x,
                                   const float* grad_out, std::int64_t M,
                                   const UpdateParams& params) {
  const std::vector<float> g = weight_gradient(state.out(), state.in(), x, grad_out, M, params);
  return Reference::update(state, g.data(), params);
}

}  // namespace TernaryCounter::Reference::Int8
