// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The row quantizers of forward (x, nearest) and backward_input (grad_out * scale, stochastic on
// stream tag_b) on CUDA (SPEC §6), for rows of whole 16-byte vectors: a team of 256 threads per
// row reads it as float4s and keeps up to `held` of them per thread in registers, so the row is
// read from memory once (the absmax, then the rounding of the same registers); the int8 results
// are stored 4 to a 32-bit word. The same rounding functions as every other quantizer
// (Quantize.hpp): the same bits; the absmax is a max and the row sum an integer sum, both exact in
// any order. Longer rows read their rest again (from cache).
// It serves calls of a few rows (max_rows), where a row's 256 threads keep enough loads in flight;
// past that RowQuantizer's rows by vector lanes serve, with no team barrier per row (two team
// reductions per row cost more than they save over thousands of rows: docs/PERFORMANCE.md).
#pragma once

#include "engines/TernaryCounter_Float4.hpp"
#include "engines/TernaryCounter_IntegerOperands.hpp"
#include "engines/TernaryCounter_Quantize.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace TernaryCounter::Impl {

template <class ExecSpace, bool Scaled, bool Stochastic>
struct VectorRowQuantizer {
  using Mem = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  static constexpr int team_size = 256;
  static constexpr int held = 4;  ///< float4s a thread keeps: rows of up to 4096 read once
  static constexpr std::int64_t max_rows = 16;
  Kokkos::View<const float**, Kokkos::LayoutRight, Mem> src;
  Kokkos::View<const float*, Mem> column_scale;             ///< Scaled: src(r, k) * column_scale(k)
  Kokkos::View<std::int8_t**, Kokkos::LayoutRight, Mem> q;  ///< [rows (+ padding), Kp]
  Kokkos::View<float*, Mem> scale;
  Kokkos::View<std::int32_t*, Mem> sums;
  std::uint32_t key = 0;
  std::int64_t first_row = 0;

  /// Whether it serves these rows: at most max_rows, read (with the column scales) as aligned
  /// float4s.
  static bool runs(const Kokkos::View<const float**, Kokkos::LayoutRight, Mem>& src,
                   const Kokkos::View<const float*, Mem>& column_scale) {
    const auto aligned = [](const void* p) {
      return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
    };
    return src.extent(0) <= max_rows && src.extent(1) % 4 == 0 && src.stride(0) % 4 == 0 &&
           aligned(src.data()) && (!Scaled || aligned(column_scale.data()));
  }

  KOKKOS_INLINE_FUNCTION Float4 load(std::int64_t r, std::int64_t g) const {
    Float4 v = *reinterpret_cast<const Float4*>(&src(r, 4 * g));
    if constexpr (Scaled) {
      const Float4 s = *reinterpret_cast<const Float4*>(&column_scale(4 * g));
      for (int e = 0; e < 4; ++e) v.v[e] = v.v[e] * s.v[e];
    }
    return v;
  }
  KOKKOS_INLINE_FUNCTION static float absmax4(float m, const Float4& v) {
    for (int e = 0; e < 4; ++e) m = absmax_join(m, absmax_term(v.v[e]));
    return m;
  }
  /// Rounds group g's 4 values, stores them as one word and returns their sum.
  KOKKOS_INLINE_FUNCTION std::int32_t round_group(const QuantizeRule& rule, std::uint32_t row_elem,
                                                  std::int64_t r, std::int64_t g,
                                                  const Float4& v) const {
    std::uint32_t packed = 0;
    std::int32_t sum = 0;
    for (int e = 0; e < 4; ++e) {
      int level;
      if constexpr (Stochastic) {
        level = rule.stochastic(v.v[e], uniform01(key, row_elem + std::uint32_t(4 * g + e)));
      } else {
        level = rule.nearest(v.v[e]);
      }
      packed |= std::uint32_t(std::uint8_t(std::int8_t(level))) << (8 * e);
      sum += level;
    }
    *reinterpret_cast<std::uint32_t*>(&q(r, 4 * g)) = packed;
    return sum;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const std::int64_t r = team.league_rank();
    const std::int64_t groups = src.extent(1) / 4, padded_groups = q.extent(1) / 4;
    const int rank = team.team_rank(), size = team.team_size();
    Float4 v[held];
    float amax = 0.0f;
    for (int h = 0; h < held; ++h) {
      const std::int64_t g = rank + std::int64_t(h) * size;
      if (g < groups) {
        v[h] = load(r, g);
        amax = absmax4(amax, v[h]);
      }
    }
    for (std::int64_t g = rank + std::int64_t(held) * size; g < groups; g += size) {
      amax = absmax4(amax, load(r, g));
    }
    team.team_reduce(Kokkos::Max<float>(amax));
    const QuantizeRule rule(amax);
    const std::uint32_t row_elem = element_index(first_row + r, src.extent(1), 0);
    std::int32_t sum = 0;
    for (int h = 0; h < held; ++h) {
      const std::int64_t g = rank + std::int64_t(h) * size;
      if (g < groups) sum += round_group(rule, row_elem, r, g, v[h]);
    }
    for (std::int64_t g = rank + std::int64_t(held) * size; g < groups; g += size) {
      sum += round_group(rule, row_elem, r, g, load(r, g));
    }
    for (std::int64_t g = groups + rank; g < padded_groups; g += size) {
      *reinterpret_cast<std::uint32_t*>(&q(r, 4 * g)) = 0u;  // the depth padding
    }
    team.team_reduce(Kokkos::Sum<std::int32_t>(sum));
    if (rank == 0) {
      scale(r) = dequantization_scale(amax);
      sums(r) = sum;
    }
  }

  void run(const ExecSpace& space, const char* label) const {
    const std::int64_t rows = src.extent(0);
    if (rows == 0) return;
    if constexpr (std::is_same_v<Mem, Kokkos::HostSpace>) {  // hosts run it only in the tests
      Kokkos::parallel_for(label, Kokkos::TeamPolicy<ExecSpace>(space, rows, Kokkos::AUTO), *this);
    } else {
      Kokkos::parallel_for(label, Kokkos::TeamPolicy<ExecSpace>(space, rows, team_size), *this);
    }
  }
};

}  // namespace TernaryCounter::Impl
