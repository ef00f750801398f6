// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Deterministic, roughly normal benchmark inputs, filled by a kernel on the device (GPU-sized
// arrays never pass through host loops).
#pragma once

#include "VendorGemm.hpp"

#include <TernaryCounter_Hash.hpp>

#include <cstdint>

namespace TernaryCounter::Perf {

/// a(i, j) ~ sigma * N(0, 1), approximated by an Irwin-Hall sum of four hashed uniforms (mean 2,
/// variance 1/3). The same (stream, shape) always gives the same values, on every backend.
inline void fill_normal(const ExecSpace& space, const Matrix& a, std::uint32_t stream,
                        float sigma) {
  const std::int64_t cols = a.extent(1);
  const float scale = sigma * 1.7320508f;  // sqrt(3): unit variance
  const std::uint32_t seed = hash_u32(stream * 0x9e3779b9u + 1u);
  Kokkos::parallel_for(
      "TernaryCounter::Perf::fill_normal",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>(space, {0, 0},
                                                        {std::int64_t(a.extent(0)), cols}),
      KOKKOS_LAMBDA(std::int64_t i, std::int64_t j) {
        const std::uint64_t k = std::uint64_t(i) * std::uint64_t(cols) + std::uint64_t(j);
        const std::uint32_t element = hash_u32(std::uint32_t(k) ^ hash_u32(std::uint32_t(k >> 32)));
        float sum = 0.0f;
        for (std::uint32_t q = 0; q < 4; ++q) sum += uniform01(seed + q, element);
        a(i, j) = (sum - 2.0f) * scale;
      });
}

}  // namespace TernaryCounter::Perf
