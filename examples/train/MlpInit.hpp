// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What the ternary MLP and its FP32 baseline share at initialization: the seeds of each layer's
// ternary draw and rounding stream, and the row scale that gives unit-variance pre-activations
// (W = scale * t with about 2/3 of t non-zero: scale = 1 / sqrt(2 in / 3)).
#pragma once

#include <TernaryCounter_Codes.hpp>
#include <TernaryCounter_Hash.hpp>
#include <TernaryCounter_PackedState.hpp>
#include <TernaryCounter_TernaryLinear.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace TernaryCounter::Train {

/// Independent seeds for each purpose (init draw, rounding) of each layer.
inline std::uint32_t derive_seed(std::uint32_t seed, std::uint32_t purpose) {
  return hash_u32(seed ^ hash_u32(purpose * 0x9E3779B9u + 0x7F4A7C15u));
}
inline std::uint32_t init_seed(std::uint32_t seed, std::size_t layer) {
  return derive_seed(seed, 100 + std::uint32_t(layer));
}
inline std::uint32_t rounding_seed(std::uint32_t seed, std::size_t layer) {
  return derive_seed(seed, 200 + std::uint32_t(layer));
}

/// The library's initial row scale (TernaryCounter::init_scale), which a TernaryLinear also draws
/// with; the FP32 baseline starts from the same weights.
inline float init_scale(std::int64_t fan_in) {
  return TernaryCounter::init_scale(fan_in);
}

/// The checkpoint name of layer l (0-based): "layer1", "layer2", ...
inline std::string layer_name(std::size_t layer) {
  return "layer" + std::to_string(layer + 1);
}

/// The float weights W [out, in] (row-major) of a freshly initialized ternary layer.
inline std::vector<float> initial_float_weights(std::int64_t out, std::int64_t in, int C,
                                                std::uint32_t seed, std::size_t layer) {
  PackedState<Kokkos::HostSpace> state("init", out, in, C);
  randomize_ternary(state, init_seed(seed, layer), init_scale(in));
  std::vector<float> w(std::size_t(out * in));
  for (std::int64_t o = 0; o < out; ++o) {
    for (std::int64_t i = 0; i < in; ++i) {
      const std::uint32_t group = load_group(&state.codes(o, bytes_per_group * (i / 4)));
      const int t = decode_ternary(group_code(group, int(i % 4)), C);
      w[o * in + i] = state.scale(o) * float(t);
    }
  }
  return w;
}

}  // namespace TernaryCounter::Train
