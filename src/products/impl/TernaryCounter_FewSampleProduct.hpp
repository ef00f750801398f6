// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// forward and backward_input for one to sixteen samples on GPUs (token-by-token inference, tiny
// batches). Each output element is one fma chain over the whole depth (the documented order), so
// a layer has only as many chains as columns times samples: 16384 columns are ~4 warps per
// multiprocessor, too few to hide the latency of loading and decoding their own codes. So a team
// serves 32 columns: decoding warps each load one 64-deep step (or half of one) of a chunk of the
// 32 columns' weights (0.75 byte per weight) and their share of the samples' values, and stage them
// in team scratch, decoded, as a row along the depth per column (t or scale * t as floats; forward
// of one or two samples t as 16-bit halves); the chain warps meanwhile run the columns' chains over
// the chunk staged before. Up to four samples a chain lane runs one column (per four weights a
// 16-byte scratch read of its row and, per sample, one read uniform across the warp); from five on
// it runs four columns of a quarter of its warp's samples, an outer product per depth index, so
// each scratch read serves more fmas. With so few samples a staged weight is read by few threads,
// so the chunk is small and the team large.
//   forward: a column's codes are one row along the depth; lane r of a decoding warp loads its
//     step of row r (48 bytes in three loads) and stores it as it runs.
//   backward_input: the 32 columns are 24 bytes of each code row (a depth index); lane r loads
//     rows 2r and 2r + 1 of its step and stores them transposed, a column's pair of depths at a
//     time (an 8-byte store per column, conflict-free across the warp).
//   Where two warps share a step (16 samples), each takes half: forward 32 codes of row r,
//   backward_input 16 columns of two rows.
// The bits equal the other kernels'.
#pragma once

#include "engines/TernaryCounter_Float4.hpp"
#include "engines/TernaryCounter_TileOperands.hpp"
#include "engines/TernaryCounter_Tiling.hpp"
#include "engines/TernaryCounter_Unroll.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace TernaryCounter::Impl {

/// The chains of `Samples` samples (samples from M on read sample M - 1 and are not stored) of 32
/// output columns per team: ChainWarps warps run Samples / ChainWarps chains per lane, and
/// DecodingWarps warps stage chunks of ChunkSteps 64-deep steps (one or two warps a step). A
/// chain lane runs LaneColumns columns of its warp's samples, Samples / ChainWarps / LaneColumns
/// of them (an outer product per depth index: its staged reads serve that many fmas).
template <class ExecSpace, class Product, int Samples, int ChainWarps = 1, int DecodingWarps = 2,
          int LaneColumns = 1, int ChunkSteps = DecodingWarps>
struct FewSampleProduct {
  // Its roles are whole 32-thread warps: a backend with wider wavefronts turns it off (Tiling).
  static_assert(Tiling<ExecSpace>::few_sample, "FewSampleProduct assumes 32-wide warps");
  using Weights = decltype(Product::b);
  using Run = typename Weights::CodeRun;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;

  static constexpr int team_cols = 32;                        ///< the columns of each chain warp
  static constexpr int chain_samples = Samples / ChainWarps;  ///< a lane's chains
  static_assert(chain_samples * ChainWarps == Samples);
  /// Lane l runs columns column_group(l) + column_groups * c and samples sample_group(l) +
  /// LaneColumns * i of its warp's: a read of the warp touches column_groups rows and LaneColumns
  /// samples (distinct banks by the paddings).
  static constexpr int column_groups = team_cols / LaneColumns;
  static constexpr int lane_samples = chain_samples / LaneColumns;
  /// A 16-byte scratch read returns 4 registers to every lane, at 128 bytes per wavefront, unless
  /// lanes l and l ^ 1 (or l ^ 2) read one address: then 2 wavefronts. Paired lanes: bit 0 of
  /// the lane picks the sample group (the rows' reads pair lanes l, l ^ 1) and bit 1 the column
  /// group (the samples' reads pair l, l ^ 2). Otherwise lane % column_groups is the column group
  /// and a read of the rows costs 4. Pairing speeds up backward_input; forward runs slower
  /// paired despite a third fewer wavefronts, so forward stays unpaired.
  static constexpr bool paired_lanes = LaneColumns > 1 && !Weights::along_depth;
  KOKKOS_INLINE_FUNCTION static int column_group(int lane) {
    return paired_lanes ? lane / 2 % column_groups : lane % column_groups;
  }
  KOKKOS_INLINE_FUNCTION static int sample_group(int lane) {
    return paired_lanes ? lane % 2 + 2 * (lane / (2 * column_groups)) : lane / column_groups;
  }
  static_assert(column_groups * LaneColumns == team_cols &&
                lane_samples * LaneColumns == chain_samples);
  /// A decoding lane's share of a 64-deep step, when one warp stages it: four 16-code runs, 48
  /// bytes (along the depth: 64 codes of one row, fetch_run_quad; across: 32 codes of two rows,
  /// fetch_run_pair each). When two warps share a step, each loads half of that: along the depth
  /// 32 codes of its row (fetch_run_pair), across one run of 16 codes of each of two rows.
  static constexpr int step_depth = 64;
  static constexpr int step_runs = 4;
  static_assert(step_runs * Weights::run_codes == step_depth && 2 * Weights::run_codes == 32);
  static constexpr int decoding_warps = DecodingWarps;
  /// Warps per step: the warp h of a chunk stages part h % warps_per_step of its step
  /// h / warps_per_step. Two warps per step keep 16 samples' chunk in 48 KB of scratch while the
  /// team has three warps: with teams of two (one chain, one decoding warp) the chain warps run on
  /// two of a multiprocessor's four schedulers (which take warps by slot modulo 4).
  static constexpr int warps_per_step = DecodingWarps / ChunkSteps;
  static_assert(warps_per_step * ChunkSteps == DecodingWarps &&
                (warps_per_step == 1 || warps_per_step == 2));
  static constexpr int lane_runs = step_runs / warps_per_step;  ///< runs a decoding lane loads
  static constexpr int chain_threads = team_cols * ChainWarps;
  static constexpr int team_size = chain_threads + team_cols * decoding_warps;
  static constexpr int chunk_depth = step_depth * ChunkSteps;
  /// Floats per staged row of weights or of a sample's values: the padding puts the 16-byte
  /// accesses to 32 rows (or 4 samples) in distinct banks.
  static constexpr int row_stride = chunk_depth + 4;
  static constexpr int sample_loads = Samples * chunk_depth / 4;  ///< Float4 per chunk
  static constexpr int decoders = team_cols * decoding_warps;
  static constexpr int sample_loads_per_thread = (sample_loads + decoders - 1) / decoders;
  /// Chunks whose operands are loaded ahead of their staging (the loop is unrolled by this).
  static constexpr int prefetch_chunks = 2;
  /// Whether a chunk's samples are loaded before its codes. nvcc (13, sm_90) gives all the loads
  /// one scoreboard, so in forward of one sample the samples' load, issued after the codes' into
  /// registers a load wrote before, waits for the codes just asked for: a memory latency per
  /// chunk (SASS control bits). Loading the samples first removes that wait; the other kernels
  /// gain nothing from it (backward_input loses), so they load their codes first.
  static constexpr bool samples_first = Weights::along_depth && Samples == 1;
  /// Depth indices a chain reads ahead of its fmas (from scratch).
  static constexpr int group_depth = chain_samples <= 4 ? 8 : 4;
  /// forward of one or two samples stages each t as the high 16 bits of its float (exact for -1,
  /// 0 and +1), two to a 32-bit word: the weights' scratch stores and reads take half the
  /// wavefronts, for a shift or a mask per weight in the chains. That pays off for one or two
  /// samples only; with more, the extra instructions gain nothing or lose. backward_input stages
  /// scale * t, which needs 32 bits.
  static constexpr bool half_weights = Weights::along_depth && Samples <= 2;
  /// 32-bit words per staged row of weights: halves fill half a row of floats (the padding keeps
  /// the banks of the rows' accesses apart as row_stride does), so a chunk takes less scratch.
  static constexpr int weight_row_stride = half_weights ? chunk_depth / 2 + 4 : row_stride;
  /// A staged chunk: the 32 rows' weights, then the samples' values over the chunk's depth.
  static constexpr int samples_offset = team_cols * weight_row_stride;
  static constexpr int chunk_floats = samples_offset + Samples * row_stride;
  /// Teams a multiprocessor must hold (the launch bound): four, or two for teams of four decoding
  /// warps (narrow layers; 160 threads of up to 204 registers).
  static constexpr int min_teams_per_multiprocessor = DecodingWarps > 2 ? 2 : 4;
  /// A column's group_depth staged halves (one 16-byte read: the one- and two-sample kernels
  /// read 8 depths ahead).
  using HalfGroup = typename Weights::Words4;
  static_assert(!half_weights || group_depth == 8);

  Product product;

  KOKKOS_INLINE_FUNCTION static constexpr std::size_t scratch_bytes() {
    return 2 * chunk_floats * sizeof(float);
  }
  static_assert(scratch_bytes() <= 45 * 1024, "a CUDA team's scratch is at most 48 KiB");

  /// Whether chunk `chunk` is whole: only the last may be partial (the depth is a multiple of
  /// step_depth).
  KOKKOS_INLINE_FUNCTION static bool whole_chunk(std::int64_t chunk, std::int64_t depth) {
    return (chunk + 1) * chunk_depth <= depth;
  }
  /// Whether depth k of chunk `chunk` (from its start; a step's first or a sample load's) lies
  /// inside the layer, given whole = whole_chunk(chunk, depth). A partial chunk of one or two
  /// steps has one step.
  KOKKOS_INLINE_FUNCTION static bool inside(bool whole, int k, std::int64_t chunk,
                                            std::int64_t depth) {
    if constexpr (ChunkSteps <= 2) {
      return whole || k < step_depth;
    } else {
      return whole || k < depth - chunk * chunk_depth;
    }
  }
  /// inside for step `step` of the chunk.
  KOKKOS_INLINE_FUNCTION static bool step_inside(bool whole, int step, std::int64_t chunk,
                                                 std::int64_t depth) {
    if constexpr (ChunkSteps <= 2) {
      return whole || step == 0;
    } else {
      return inside(whole, step * step_depth, chunk, depth);
    }
  }

  /// What a decoding thread loads for one chunk: its row's step and its share of the samples.
  struct Loaded {
    Run runs[lane_runs];
    Float4 x[sample_loads_per_thread];
  };
  struct alignas(8) Float2 {
    float v[2];
  };
  /// What a chain reads for group_depth indices.
  struct Operands {
    std::conditional_t<half_weights, HalfGroup[LaneColumns], Float4[LaneColumns][group_depth / 4]>
        t;
    Float4 x[lane_samples][group_depth / 4];
    /// Column c's weight at depth 4 v + e of the group.
    KOKKOS_INLINE_FUNCTION float weight(int c, int v, int e) const {
      if constexpr (half_weights) {
        const std::uint32_t word = t[c].w[2 * v + e / 2];
        return Kokkos::bit_cast<float>(e % 2 ? word & 0xFFFF0000u : word << 16);
      } else {
        return t[c][v].v[e];
      }
    }
  };

  // The first ChainWarps warps run the chains, the others stage the chunks; both pass one team
  // barrier before the first chunk and one after each (the two roles are whole warps, so each
  // barrier is reached by every thread, from two places in the code). Apart, neither holds the
  // other's registers.
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    auto* scratch = static_cast<float*>(team.team_shmem().get_shmem_aligned(scratch_bytes(), 16));
    if (team.team_rank() < chain_threads) {
      run_chains(team, scratch);
    } else {
      stage_chunks(team, scratch);
    }
  }

  /// Across the depth a lane's two depth rows, from depth `lane_depth(lane, part)` of the step,
  /// and its column runs: both (one warp per step) or run lane / 16.
  static constexpr int lane_column_runs = 2 / warps_per_step;
  KOKKOS_INLINE_FUNCTION static int lane_depth(int lane, int part) {
    return warps_per_step == 1 ? 2 * lane : 32 * part + 2 * (lane % 16);
  }

  /// Loads decoding lane `lane`'s share (part `part`) of the step at depth k of the columns from
  /// j0 (see the file's comment; forward clamps the row into the layer, a partial last team reads
  /// its last).
  KOKKOS_INLINE_FUNCTION void fetch_step(std::int64_t k, std::int64_t j0, int lane, int part,
                                         Run (&runs)[lane_runs]) const {
    const Weights& w = product.b;
    if constexpr (Weights::along_depth) {
      const std::int64_t row = Kokkos::min(j0 + lane, product.cols() - 1);
      if constexpr (warps_per_step == 1) {
        w.fetch_run_quad(k, row, runs);
      } else {
        w.fetch_run_pair(k + 32 * part, row, runs);
      }
    } else {  // runs[lane_column_runs * r + h]: depth row r, column run h
      for (int r = 0; r < 2; ++r) {
        const std::int64_t depth_row = k + lane_depth(lane, part) + r;
        if constexpr (warps_per_step == 1) {
          Run pair[2];
          w.fetch_run_pair(depth_row, j0, pair);
          runs[2 * r] = pair[0], runs[2 * r + 1] = pair[1];
        } else {
          runs[r] = w.fetch_run(depth_row, j0 + Weights::run_codes * (lane / 16));
        }
      }
    }
  }
  /// Stages what fetch_step loaded into the columns' rows of `buffer` from depth `staged_k`.
  KOKKOS_INLINE_FUNCTION void stage_step(const Run (&runs)[lane_runs], int lane, int part,
                                         int staged_k, float* buffer) const {
    const Weights& w = product.b;
    constexpr int n = Weights::run_codes;
    if constexpr (Weights::along_depth) {
      TERNARYCOUNTER_UNROLL
      for (int r = 0; r < lane_runs; ++r) {
        float t[n];
        w.expand_run(runs[r], t);
        const int first = staged_k + n * (lane_runs * part + r);
        float* row = buffer + lane * weight_row_stride;
        if constexpr (half_weights) {
          const auto half = [&](int q) {
            return (Kokkos::bit_cast<std::uint32_t>(t[q + 1]) & 0xFFFF0000u) |
                   Kokkos::bit_cast<std::uint32_t>(t[q]) >> 16;
          };
          auto* words = reinterpret_cast<std::uint32_t*>(row) + first / 2;
          for (int q = 0; q < n; q += 8) {
            *reinterpret_cast<HalfGroup*>(words + q / 2) =
                HalfGroup{{half(q), half(q + 2), half(q + 4), half(q + 6)}};
          }
        } else {
          for (int q = 0; q < n; q += 4) {
            *reinterpret_cast<Float4*>(row + first + q) =
                Float4{{t[q], t[q + 1], t[q + 2], t[q + 3]}};
          }
        }
      }
    } else {  // a column's two depths at a time
      TERNARYCOUNTER_UNROLL
      for (int h = 0; h < lane_column_runs; ++h) {
        float t0[n], t1[n];
        w.expand_run(runs[h], t0);
        w.expand_run(runs[lane_column_runs + h], t1);
        const int first_column = n * (warps_per_step == 1 ? h : lane / 16);
        float* pair = buffer + first_column * weight_row_stride + staged_k + lane_depth(lane, part);
        for (int q = 0; q < n; ++q) {
          *reinterpret_cast<Float2*>(pair + q * weight_row_stride) = Float2{{t0[q], t1[q]}};
        }
      }
    }
  }

  KOKKOS_INLINE_FUNCTION void stage_chunks(const member_type& team, float* scratch) const {
    const std::int64_t depth = product.depth(), samples = product.rows();
    const std::int64_t chunks = (depth + chunk_depth - 1) / chunk_depth;
    const std::int64_t j0 = std::int64_t(team.league_rank()) * team_cols;
    // Thread d stages part `part` of step `step` of every chunk as lane d % 32, and the samples'
    // Float4 d, d + decoders, ... of it (samples from M on repeat sample M - 1).
    const int d = team.team_rank() - chain_threads, lane = d % team_cols;
    const int step = d / team_cols / warps_per_step, part = d / team_cols % warps_per_step;
    const float* x_at[sample_loads_per_thread];
    int x_depth[sample_loads_per_thread], staged_x[sample_loads_per_thread];
    TERNARYCOUNTER_UNROLL
    for (int l = 0; l < sample_loads_per_thread; ++l) {
      const int q = Kokkos::min(d + l * decoders, sample_loads - 1);
      const int s = q / (chunk_depth / 4);
      x_depth[l] = 4 * (q % (chunk_depth / 4));
      x_at[l] = &product.a.view(Kokkos::min(std::int64_t(s), samples - 1), 0) + x_depth[l];
      staged_x[l] = samples_offset + s * row_stride + x_depth[l];
    }

    Loaded ring[prefetch_chunks] = {};
    // A depth lies inside the layer if its chunk is whole or it lies in the chunk's steps inside
    // the layer (32-bit tests, which nvcc drops when chunks are one step).
    const auto fetch = [&](std::int64_t chunk, Loaded& l) {
      if (chunk >= chunks) return;
      const std::int64_t k0 = chunk * chunk_depth;
      const bool all = whole_chunk(chunk, depth);
      const auto fetch_samples = [&] {
        TERNARYCOUNTER_UNROLL
        for (int i = 0; i < sample_loads_per_thread; ++i) {
          if (inside(all, x_depth[i], chunk, depth)) {
            l.x[i] = *reinterpret_cast<const Float4*>(x_at[i] + k0);
          }
        }
      };
      if constexpr (samples_first) fetch_samples();
      if (step_inside(all, step, chunk, depth)) {
        fetch_step(k0 + step * step_depth, j0, lane, part, l.runs);
      }
      if constexpr (!samples_first) fetch_samples();
    };
    const auto stage = [&](const Loaded& l, std::int64_t chunk) {
      if (chunk >= chunks) return;
      const bool all = whole_chunk(chunk, depth);
      float* buffer = scratch + (chunk % 2) * chunk_floats;
      if (step_inside(all, step, chunk, depth)) {
        stage_step(l.runs, lane, part, step * step_depth, buffer);
      }
      // Threads past the samples' last load store it again: the same value, the same place.
      TERNARYCOUNTER_UNROLL
      for (int i = 0; i < sample_loads_per_thread; ++i) {
        if (inside(all, x_depth[i], chunk, depth)) {
          *reinterpret_cast<Float4*>(buffer + staged_x[i]) = l.x[i];
        }
      }
    };

    for (int b = 0; b < prefetch_chunks; ++b) fetch(b, ring[b]);
    stage(ring[0], 0);
    fetch(prefetch_chunks, ring[0]);
    team.team_barrier();
    // While the chains run chunk c, chunk c + 1 is staged into the other buffer; ring slot
    // (c + 1) % prefetch_chunks holds its loads and is refilled with the chunk prefetch_chunks
    // later.
    for (std::int64_t c0 = 0; c0 < chunks; c0 += prefetch_chunks) {
      TERNARYCOUNTER_UNROLL
      for (int b = 0; b < prefetch_chunks; ++b) {
        const std::int64_t c = c0 + b;
        if (c >= chunks) break;
        Loaded& slot = ring[(b + 1) % prefetch_chunks];
        stage(slot, c + 1);
        fetch(c + 1 + prefetch_chunks, slot);
        team.team_barrier();
      }
    }
  }

  KOKKOS_INLINE_FUNCTION void run_chains(const member_type& team, const float* scratch) const {
    const std::int64_t depth = product.depth();
    const std::int64_t chunks = (depth + chunk_depth - 1) / chunk_depth;
    const int lane = team.team_rank() % team_cols;
    const int column = column_group(lane);
    /// The lane's first sample: its warp's first, plus its sample group.
    const int first = chain_samples * (team.team_rank() / team_cols) + sample_group(lane);
    float acc[chain_samples] = {};  ///< column c, sample i at c * lane_samples + i
    team.team_barrier();
    for (std::int64_t c = 0; c < chunks; ++c) {
      const float* buffer = scratch + (c % 2) * chunk_floats;
      if (whole_chunk(c, depth)) {
        chain_chunk<chunk_depth>(buffer, column, first, acc);
      } else {
        if constexpr (ChunkSteps <= 2) {
          chain_chunk<step_depth>(buffer, column, first, acc);
        } else {
          chain_steps(int((depth - c * chunk_depth) / step_depth), buffer, column, first, acc);
        }
      }
      team.team_barrier();
    }
    for (int c = 0; c < LaneColumns; ++c) {
      const std::int64_t o =
          std::int64_t(team.league_rank()) * team_cols + column + column_groups * c;
      for (int i = 0; i < lane_samples; ++i) {
        const int s = first + LaneColumns * i;
        if (o < product.cols() && s < product.rows())
          product.store(s, o, acc[c * lane_samples + i]);
      }
    }
  }

  /// chain_chunk over the first `steps` steps of a partial chunk (Steps or more, fewer than
  /// ChunkSteps).
  template <int Steps = 1>
  KOKKOS_INLINE_FUNCTION static void chain_steps(int steps, const float* buffer, int column,
                                                 int first, float (&acc)[chain_samples]) {
    if constexpr (Steps < ChunkSteps) {
      if (steps == Steps) {
        chain_chunk<Steps * step_depth>(buffer, column, first, acc);
      } else {
        chain_steps<Steps + 1>(steps, buffer, column, first, acc);
      }
    }
  }

  /// The first Depth fmas of a staged chunk, in order; each group's operands are read while the
  /// group before runs its fmas.
  template <int Depth>
  KOKKOS_INLINE_FUNCTION static void chain_chunk(const float* buffer, int column, int first,
                                                 float (&acc)[chain_samples]) {
    const float* rows = buffer + column * weight_row_stride;
    const float* samples = buffer + (samples_offset + first * row_stride);
    const auto read = [&](int g, Operands& op) {
      if constexpr (half_weights) {
        for (int c = 0; c < LaneColumns; ++c) {
          const float* row = rows + column_groups * c * weight_row_stride;
          op.t[c] = reinterpret_cast<const HalfGroup*>(row)[g];
        }
      }
      TERNARYCOUNTER_UNROLL
      for (int v = 0; v < group_depth / 4; ++v) {
        const int k = g * group_depth + 4 * v;
        if constexpr (!half_weights) {
          for (int c = 0; c < LaneColumns; ++c) {
            op.t[c][v] =
                *reinterpret_cast<const Float4*>(rows + column_groups * c * weight_row_stride + k);
          }
        }
        for (int i = 0; i < lane_samples; ++i) {
          op.x[i][v] = *reinterpret_cast<const Float4*>(samples + LaneColumns * i * row_stride + k);
        }
      }
    };
    const auto fmas = [&](const Operands& op) {
      for (int v = 0; v < group_depth / 4; ++v) {
        for (int e = 0; e < 4; ++e) {
          for (int c = 0; c < LaneColumns; ++c) {
            for (int i = 0; i < lane_samples; ++i) {
              float& a = acc[c * lane_samples + i];
              a = Kokkos::fma(op.x[i][v].v[e], op.weight(c, v, e), a);
            }
          }
        }
      }
    };
    // Two named buffers, not an array indexed by g: a loop nvcc does not unroll would put an
    // array in local memory.
    constexpr int groups = Depth / group_depth;
    static_assert(groups % 2 == 0);
    Operands even, odd;
    read(0, even);
    TERNARYCOUNTER_UNROLL
    for (int g = 0; g < groups; g += 2) {
      read(g + 1, odd);
      fmas(even);
      if (g + 2 < groups) read(g + 2, even);
      fmas(odd);
    }
  }
};

/// Runs the product by FewSampleProduct when it serves it: at most `max_few_samples` samples in
/// 16-byte aligned rows, a depth of whole 64-deep steps and 16-byte aligned code rows, and for
/// backward_input whole teams of columns (the usual layer shapes). Returns whether it ran.
inline constexpr int max_few_samples = 16;
template <class ExecSpace, class Product>
bool run_few_sample_product(const ExecSpace& space, const Product& product, const char* label) {
  using One = FewSampleProduct<ExecSpace, Product, 1>;
  const std::int64_t samples = product.rows(), cols = product.cols();
  const bool whole_teams = cols % One::team_cols == 0;
  if (samples < 1 || samples > max_few_samples || cols == 0 || product.depth() == 0 ||
      !product.a.vector || !product.b.pair_aligned() ||
      (One::Weights::along_depth
           ? !product.b.covers(0, 1, One::step_depth)
           : !whole_teams ||
                 !product.b.covers(cols - One::team_cols, One::team_cols, One::step_depth))) {
    return false;
  }
  const std::int64_t teams = (cols + One::team_cols - 1) / One::team_cols;
  const auto launch = [&](auto kernel) {
    using Kernel = decltype(kernel);
    Kokkos::parallel_for(
        label,
        Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<Kernel::team_size,
                                                           Kernel::min_teams_per_multiprocessor>>(
            space, teams, Kernel::team_size)
            .set_scratch_size(0, Kokkos::PerTeam(Kernel::scratch_bytes())),
        kernel);
  };
  constexpr std::int64_t threads_per_multiprocessor = Tiling<ExecSpace>::threads_per_multiprocessor;
  // Narrow layers (under about 3 teams per multiprocessor) of one or two samples in forward:
  // four decoding warps over 256-deep chunks of halves. nvcc puts all of a decoding lane's loads
  // on one scoreboard, so staging a chunk waits for every load in flight, the next chunk's too:
  // a longer chunk hides more of that wait behind the chains.
  const bool narrow = teams * threads_per_multiprocessor < 3 * std::int64_t(space.concurrency());
  if constexpr (One::Weights::along_depth) {
    if (samples <= 2 && narrow) {
      if (samples == 1) {
        launch(FewSampleProduct<ExecSpace, Product, 1, 1, 4, 1, 4>{product});
      } else {
        launch(FewSampleProduct<ExecSpace, Product, 2, 1, 4, 1, 4>{product});
      }
      return true;
    }
  }
  if (samples == 1) {
    launch(One{product});
  } else if (samples == 2) {
    launch(FewSampleProduct<ExecSpace, Product, 2>{product});
  } else if (samples <= 4) {
    launch(FewSampleProduct<ExecSpace, Product, 4>{product});
  } else if (samples <= 8) {
    launch(FewSampleProduct<ExecSpace, Product, 8, 1, 2, 4>{product});
  } else if (!narrow) {
    // 9-16 samples, chunks of one step (the scratch stays under 48 KiB) that two warps stage.
    // With about 3 teams per multiprocessor (2048 threads each) one chain warp per team, which
    // reads each staged weight once, is faster; on narrower layers two chain warps of 8 samples
    // are.
    launch(FewSampleProduct<ExecSpace, Product, 16, 1, 2, 4, 1>{product});
  } else {
    launch(FewSampleProduct<ExecSpace, Product, 16, 2, 1, 4>{product});
  }
  return true;
}

}  // namespace TernaryCounter::Impl
