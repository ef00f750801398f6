// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The weight gradient's operands on GPUs (SPEC §6, update from IO): x's columns quantized to
// nearest and grad_out's to stochastic levels, each written transposed ([column, sample], the
// samples contiguous and zero-padded: the vendor GEMM's operand layout), with the columns' scales
// and grad_out's column sums. The same values as the hosts' ColumnQuantizer, by other means:
// 1. column_absmax: a thread per column (per 4 columns, read as float4s, where the rows allow)
//    and 16 samples, loaded in one unrolled run (16 loads in flight), an atomic max of the
//    absmax bits (a max is exact in any order);
// 2. quantize_columns: a team per 64 samples x 64 columns reads the tile row by row (coalesced),
//    rounds, transposes through scratch and writes 64 rows of 64 bytes; each column's sum is
//    added atomically (an integer sum: any order).
// A 16-bit x and grad_out (T) are widened as they are read (exact: the float matrices' bits).
#pragma once

#include "TernaryCounter_ViewTypes.hpp"
#include "engines/TernaryCounter_Float4.hpp"
#include "engines/TernaryCounter_IntegerOperands.hpp"
#include "engines/TernaryCounter_Quantize.hpp"
#include "engines/TernaryCounter_Unroll.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace TernaryCounter::Impl {

template <class ExecSpace, class T = float>
struct TiledColumnQuantizer {
  using Mem = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  static constexpr int tile = 64;
  static constexpr int absmax_samples = 16;  ///< samples per thread of column_absmax
  static constexpr int pitch = tile + 4;     ///< scratch row pitch in bytes
  struct Absmax {};
  struct Absmax4 {};
  struct Quantize {};

  InputView<Mem, T> x, grad_out;
  Int8Matrix<Mem> xq;  ///< [in, Mp]
  Kokkos::View<float*, Mem> x_scale;
  Int8Matrix<Mem> gq;  ///< [out (+ padding rows), Mp]
  Kokkos::View<float*, Mem> gq_scale;
  Kokkos::View<std::int32_t*, Mem> gq_sums;
  Kokkos::View<std::uint32_t*, Mem> amax_bits;  ///< [in + out]: x's columns, then grad_out's
  std::uint32_t key = 0;
  std::int64_t row_offset = 0;
  /// Data parallelism (SPEC §7): the global batch size and this block's first global sample,
  /// which key gq's stream (-1: these samples are the whole batch).
  std::int64_t stream_samples = -1;
  std::int64_t sample_offset = 0;

  KOKKOS_INLINE_FUNCTION std::int64_t in() const { return x.extent(1); }
  KOKKOS_INLINE_FUNCTION std::int64_t out() const { return grad_out.extent(1); }
  KOKKOS_INLINE_FUNCTION std::int64_t samples() const { return x.extent(0); }
  KOKKOS_INLINE_FUNCTION static std::int64_t tiles(std::int64_t n) { return (n + tile - 1) / tile; }
  std::int64_t absmax_chunks() const { return (samples() + absmax_samples - 1) / absmax_samples; }

  /// Column c of [x | grad_out], samples [16 chunk, 16 chunk + 16).
  KOKKOS_INLINE_FUNCTION void operator()(Absmax, std::int64_t idx) const {
    const std::int64_t cols = in() + out(), c = idx % cols, m0 = idx / cols * absmax_samples;
    std::uint32_t bits = 0;
    TERNARYCOUNTER_UNROLL
    for (int j = 0; j < absmax_samples; ++j) {
      const std::int64_t m = m0 + j;
      if (m >= samples()) continue;
      const std::uint32_t b = absmax_term_bits(widen(c < in() ? x(m, c) : grad_out(m, c - in())));
      bits = b > bits ? b : bits;
    }
    if (bits != 0) Kokkos::atomic_max(&amax_bits(c), bits);
  }

  /// Columns 4 q .. 4 q + 3 of [x | grad_out] (both of whole float4 rows), 16 samples.
  KOKKOS_INLINE_FUNCTION void operator()(Absmax4, std::int64_t idx) const {
    const std::int64_t quads = (in() + out()) / 4, c = idx % quads * 4;
    const std::int64_t m0 = idx / quads * absmax_samples;
    std::uint32_t bits[4] = {0, 0, 0, 0};
    TERNARYCOUNTER_UNROLL
    for (int j = 0; j < absmax_samples; ++j) {
      const std::int64_t m = m0 + j;
      if (m >= samples()) continue;
      const Float4 v =
          *reinterpret_cast<const Float4*>(c < in() ? &x(m, c) : &grad_out(m, c - in()));
      for (int e = 0; e < 4; ++e) {
        const std::uint32_t b = absmax_term_bits(v.v[e]);
        bits[e] = b > bits[e] ? b : bits[e];
      }
    }
    for (int e = 0; e < 4; ++e) {
      if (bits[e] != 0) Kokkos::atomic_max(&amax_bits(c + e), bits[e]);
    }
  }

  /// Whether a matrix's rows are whole, aligned float4s (Absmax4).
  static bool float4_rows(const InputView<Mem, T>& a) {
    return std::is_same_v<T, float> && a.extent(1) % 4 == 0 && a.stride(0) % 4 == 0 &&
           reinterpret_cast<std::uintptr_t>(a.data()) % 16 == 0;
  }

  KOKKOS_INLINE_FUNCTION void operator()(Quantize, const member_type& team) const {
    const std::int64_t m_tiles = xq.extent(1) / tile, x_tiles = tiles(in());
    const std::int64_t m0 = team.league_rank() % m_tiles * tile;
    const std::int64_t ct = team.league_rank() / m_tiles;
    const bool of_x = ct < x_tiles;
    const std::int64_t c0 = (of_x ? ct : ct - x_tiles) * tile, n = of_x ? in() : out();
    const std::int64_t M = samples(), first_amax = of_x ? 0 : in();
    const Int8Matrix<Mem>& dst = of_x ? xq : gq;
    std::int8_t* q = static_cast<std::int8_t*>(team.team_scratch(0).get_shmem(tile * pitch));
    std::int32_t* partial = static_cast<std::int32_t*>(
        team.team_scratch(0).get_shmem(tile * (tile / 4) * sizeof(std::int32_t)));

    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tile * tile), [&](int t) {
      const int ml = t / tile, cl = t % tile;
      const std::int64_t m = m0 + ml, c = c0 + cl;
      int v = 0;
      if (m < M && c < n) {
        const QuantizeRule rule(absmax_from_bits(amax_bits(first_amax + c)));
        if (of_x) {
          v = rule.nearest(widen(x(m, c)));
        } else {
          const std::uint32_t elem =
              element_index(row_offset + c, stream_samples < 0 ? M : stream_samples,
                            sample_offset) +
              std::uint32_t(m);
          v = rule.stochastic(widen(grad_out(m, c)), uniform01(key, elem));
        }
      }
      q[cl * pitch + ml] = std::int8_t(v);
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tile * (tile / 4)), [&](int t) {
      const int cl = t / (tile / 4), w = t % (tile / 4);
      const std::int64_t c = c0 + cl;
      std::uint32_t packed = 0;
      std::int32_t sum = 0;
      for (int e = 0; e < 4; ++e) {
        const std::int8_t v = q[cl * pitch + 4 * w + e];
        packed |= std::uint32_t(std::uint8_t(v)) << (8 * e);
        sum += v;
      }
      if (c < n) *reinterpret_cast<std::uint32_t*>(&dst(c, m0 + 4 * w)) = packed;
      partial[t] = sum;
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tile), [&](int cl) {
      const std::int64_t c = c0 + cl;
      if (c >= n) return;
      if (!of_x) {
        std::int32_t sum = 0;
        for (int w = 0; w < tile / 4; ++w) sum += partial[cl * (tile / 4) + w];
        if (sum != 0) Kokkos::atomic_add(&gq_sums(c), sum);
      }
      if (m0 == 0) {
        const float scale = dequantization_scale(absmax_from_bits(amax_bits(first_amax + c)));
        (of_x ? x_scale : gq_scale)(c) = scale;
      }
    });
  }

  void run(const ExecSpace& space) const {
    run_absmax(space);
    run_quantize(space);
  }

  /// Pass 1 alone: amax_bits of these samples.
  void run_absmax(const ExecSpace& space) const {
    Kokkos::deep_copy(space, amax_bits, 0u);
    const std::int64_t cols = in() + out();
    if (float4_rows(x) && float4_rows(grad_out)) {
      Kokkos::parallel_for("TernaryCounter::update_from_io::column_absmax",
                           Kokkos::RangePolicy<ExecSpace, Absmax4, Kokkos::IndexType<std::int64_t>>(
                               space, 0, absmax_chunks() * (cols / 4)),
                           *this);
    } else {
      Kokkos::parallel_for("TernaryCounter::update_from_io::column_absmax",
                           Kokkos::RangePolicy<ExecSpace, Absmax, Kokkos::IndexType<std::int64_t>>(
                               space, 0, absmax_chunks() * cols),
                           *this);
    }
  }

  /// Pass 2 alone, with the absmax in amax_bits (one process's, or agreed by the ranks).
  void run_quantize(const ExecSpace& space) const {
    Kokkos::deep_copy(space, gq_sums, 0);
    const std::int64_t teams = std::int64_t(xq.extent(1) / tile) * (tiles(in()) + tiles(out()));
    const int scratch = tile * pitch + tile * (tile / 4) * int(sizeof(std::int32_t));
    Kokkos::TeamPolicy<ExecSpace, Quantize> policy(space, teams, Kokkos::AUTO);
    if constexpr (!std::is_same_v<Mem, Kokkos::HostSpace>) {  // hosts run it only in the tests
      policy = Kokkos::TeamPolicy<ExecSpace, Quantize>(space, teams, 256);
    }
    Kokkos::parallel_for("TernaryCounter::update_from_io::quantize_columns",
                         policy.set_scratch_size(0, Kokkos::PerTeam(scratch)), *this);
  }
};

}  // namespace TernaryCounter::Impl
