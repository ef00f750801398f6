// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// forward and backward_input for a few samples (M <= 16: evaluation, inference, small batches)
// on GPUs. There the tile engine's tiles would be mostly padding, and the product is bound by
// reading the weights, which are 0.75 byte per weight here against a dense layer's 4. (On CUDA,
// products over aligned rows, the usual layer shapes, run FewSampleProduct instead; on HIP this
// kernel serves them all.)
//
// A Product (ForwardProduct, BackwardInputProduct) supplies the samples operand a (k along the
// depth, j = m), the weights operand b (k along the depth, j across) and store(m, j, acc). A team
// owns 64 columns j of the output. Per step of 64 depth indices it stages the samples' slice and
// the decoded weights (each code decoded once per team, into scratch, as [j][k] floats), then each
// thread accumulates a 2-column x 4-sample register block. Each element is the documented fma
// chain over the depth in ascending order: the bits equal the tile engine's. Products of whole
// teams and steps over 16-byte aligned code rows (the usual layer shapes) launch a kernel that
// loads the weights as pairs of 16-code runs without edge tests (WholeSteps). The kernel is bound
// by its shared-memory traffic and latency.
#pragma once

#include "engines/TernaryCounter_Float4.hpp"
#include "engines/TernaryCounter_HostIsa.hpp"
#include "engines/TernaryCounter_TileOperands.hpp"
#include "engines/TernaryCounter_Unroll.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

template <class ExecSpace, class Product>
struct SmallBatchProduct {
  using memory_space = typename ExecSpace::memory_space;
  using Samples = decltype(Product::a);
  using Weights = decltype(Product::b);
  static_assert(Samples::along_depth, "the samples' slice is staged as runs along the depth");
  static constexpr int max_samples = 16;
  static constexpr int lanes = 32;
  static constexpr int block_cols = 2;     ///< columns of a thread's register block, 16 apart
  static constexpr int block_samples = 4;  ///< samples of a thread's register block
  static constexpr int team_cols = 64;
  static constexpr int team_size = team_cols * max_samples / (block_cols * block_samples);
  /// A warp's block: 32 columns x 8 samples. Lane l takes columns l / 2 (+ 16) and samples
  /// 4 (l % 2) .. +3, so lanes l and l ^ 1 read the same weights and lanes l and l ^ 2 the same
  /// samples: such pair-uniform shared loads return two registers per wavefront, which halves
  /// the traffic of the 16-byte weight reads without staging them in a narrower format.
  static constexpr int warp_cols = 32, warp_samples = 8;
  static_assert(team_size == 4 * lanes &&
                warp_cols * warp_samples == lanes * block_cols * block_samples);
  static constexpr int step_depth = 64;                 ///< depth indices staged per step
  static constexpr int weight_stride = step_depth + 4;  ///< padded: conflict-free column reads
  static constexpr int sample_stride = step_depth + 4;  ///< padded: samples 4 apart, other banks
  static constexpr int sample_runs = max_samples * step_depth / 4 / team_size;
  static constexpr int weight_floats = team_cols * weight_stride;
  static constexpr int stage_floats = max_samples * sample_stride + weight_floats;

  // Two teams per multiprocessor: even a 16384-column product has only 256 teams, and the
  // registers beyond a 4-team budget hold the prefetched words instead of spilling them.
  template <class... Tag>
  using policy_for = Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<team_size, 2>, Tag...>;
  using policy_type = policy_for<>;
  using member_type = typename policy_type::member_type;

  Product product;

  /// Work tag of the launch for products whose columns are whole teams and whose depth is whole
  /// steps, over word-aligned code rows: every weight run is 16 codes in three aligned words.
  struct WholeSteps {};

  KOKKOS_INLINE_FUNCTION static std::size_t scratch_bytes() {
    return sizeof(float) * 2 * stage_floats + 16;
  }

  /// Stages the weights at (kk, jj) of a step's slice, transposed to [jj][kk] when the run lies
  /// across (a thread per depth index then: consecutive banks).
  template <int N>
  KOKKOS_INLINE_FUNCTION static void store_weights(float* bs, int kk, int jj, const float* w) {
    if constexpr (Weights::along_depth) {
      for (int e = 0; e < N; e += 4) {
        *reinterpret_cast<Float4*>(bs + jj * weight_stride + kk + e) =
            Float4{{w[e], w[e + 1], w[e + 2], w[e + 3]}};
      }
    } else {
      for (int e = 0; e < N; ++e) bs[(jj + e) * weight_stride + kk] = w[e];
    }
  }

  /// A step's weight slice as runs of four (one group each: any shape, edges read as t = 0).
  /// Runs along the depth: consecutive threads read a row's consecutive groups (coalesced).
  /// Runs across: a thread per depth index, so that the transposed stores hit consecutive banks.
  struct GroupRuns {
    static constexpr bool whole_steps_only = false;  ///< the last step may be partial
    static constexpr int per_thread = team_cols * step_depth / 4 / team_size;
    typename Weights::loaded_type next[per_thread];  ///< as loaded: extraction waits for loads

    KOKKOS_INLINE_FUNCTION static void place(int q, int& kk, int& jj) {
      if constexpr (Weights::along_depth) {
        jj = q / (step_depth / 4);
        kk = 4 * (q % (step_depth / 4));
      } else {
        kk = q % step_depth;
        jj = 4 * (q / step_depth);
      }
    }
    KOKKOS_INLINE_FUNCTION void load(const Weights& b, int tid, std::int64_t k0, std::int64_t j0) {
      for (int r = 0; r < per_thread; ++r) {
        int kk, jj;
        place(tid + r * team_size, kk, jj);
        next[r] = b.fetch_loaded(k0 + kk, j0 + jj);
      }
    }
    KOKKOS_INLINE_FUNCTION void stage(const Weights& b, int tid, std::int64_t k0, std::int64_t j0,
                                      float* bs) const {
      for (int r = 0; r < per_thread; ++r) {
        int kk, jj;
        place(tid + r * team_size, kk, jj);
        const Float4 w = b.expand(next[r], b.group_shift(k0 + kk, j0 + jj));
        store_weights<4>(bs, kk, jj, w.v);
      }
    }
  };

  /// A step's weight slice as runs of 16 codes (WholeSteps). The slice is 64 code rows of 64 codes
  /// (forward: rows are output columns; backward_input: depth indices); lane l of warp w takes
  /// half w / 2 (two runs, one 24-byte piece: TernaryOperand::fetch_run_pair) of code row
  /// l + 32 (w % 2). A load instruction touches each of the warp's 32 rows once, and both layouts
  /// store conflict-free (along the depth: 8 consecutive rows 68 floats apart per quarter warp;
  /// across: 32 consecutive depth indices).
  struct CodeRuns {
    static constexpr bool whole_steps_only = true;  ///< launched only for whole steps
    using Run = typename Weights::CodeRun;
    static constexpr int width = Weights::run_codes;
    static constexpr int per_thread = 2;
    static constexpr int code_rows = Weights::along_depth ? team_cols : step_depth;
    static_assert(code_rows == 64 && team_size == 2 * code_rows &&
                      (Weights::along_depth ? step_depth : team_cols) == 2 * per_thread * width,
                  "a lane per half of a 64-code row slice");
    Run next[per_thread];

    KOKKOS_INLINE_FUNCTION static void place(int tid, int r, int& kk, int& jj) {
      const int code_row = tid % code_rows, code_col = per_thread * width * (tid / code_rows);
      kk = Weights::along_depth ? code_col + width * r : code_row;
      jj = Weights::along_depth ? code_row : code_col + width * r;
    }
    KOKKOS_INLINE_FUNCTION void load(const Weights& b, int tid, std::int64_t k0, std::int64_t j0) {
      int kk, jj;
      place(tid, 0, kk, jj);
      b.fetch_run_pair(k0 + kk, j0 + jj, next);
    }
    KOKKOS_INLINE_FUNCTION void stage(const Weights& b, int tid, std::int64_t, std::int64_t,
                                      float* bs) const {
      for (int r = 0; r < per_thread; ++r) {
        int kk, jj;
        place(tid, r, kk, jj);
        float w[width];
        b.expand_run(next[r], w);
        store_weights<width>(bs, kk, jj, w);
      }
    }
  };

  // Run q of the samples' slice: sample q / 16, depth 4 (q % 16), staged as [m][kk].
  KOKKOS_INLINE_FUNCTION static int sample_of(int q) { return q / (step_depth / 4); }
  KOKKOS_INLINE_FUNCTION static int sample_depth(int q) { return 4 * (q % (step_depth / 4)); }

  /// A thread's register block: columns col + 16 r and samples sample + s of the team's.
  struct Block {
    int col, sample;
    KOKKOS_INLINE_FUNCTION explicit Block(int tid) {
      const int warp = tid / lanes, lane = tid % lanes;
      col = warp_cols * (warp / 2) + lane / 2;
      sample = warp_samples * (warp % 2) + block_samples * (lane % 2);
    }
    static constexpr int col_step = warp_cols / block_cols;
  };

  /// acc[r][s] = fma(a[s][kk], b[r][kk], acc[r][s]) for the step's kk ascending (Depth > 0: a
  /// full step, known at compile time; else `depth`, which may end inside a run of four).
  template <int Depth>
  KOKKOS_INLINE_FUNCTION static void step_fma(float (&acc)[block_cols][block_samples],
                                              const float* as, const float* bs, const Block& block,
                                              int depth = Depth) {
    const float* a_rows = as + block.sample * sample_stride;
    const float* b_rows = bs + block.col * weight_stride;
    TERNARYCOUNTER_UNROLL
    for (int c = 0; c < (Depth > 0 ? Depth : depth); c += 4) {
      Float4 b[block_cols], a[block_samples];
      for (int r = 0; r < block_cols; ++r) {
        b[r] = *reinterpret_cast<const Float4*>(b_rows + Block::col_step * r * weight_stride + c);
      }
      for (int s = 0; s < block_samples; ++s) {
        a[s] = *reinterpret_cast<const Float4*>(a_rows + s * sample_stride + c);
      }
      for (int e = 0; e < 4; ++e) {
        if (Depth == 0 && c + e >= depth) break;
        for (int r = 0; r < block_cols; ++r) {
          for (int s = 0; s < block_samples; ++s) {
            acc[r][s] = Kokkos::fma(a[s].v[e], b[r].v[e], acc[r][s]);
          }
        }
      }
    }
  }

  KOKKOS_FUNCTION void operator()(const member_type& team) const { run_team_body(*this, team); }
  KOKKOS_FUNCTION void operator()(WholeSteps, const member_type& team) const {
    run_steps<CodeRuns>(team);
  }
  KOKKOS_INLINE_FUNCTION void team_body(const member_type& team) const {
    run_steps<GroupRuns>(team);
  }

  template <class WeightRuns>
  KOKKOS_INLINE_FUNCTION void run_steps(const member_type& team) const {
    auto* scratch = static_cast<float*>(team.team_shmem().get_shmem_aligned(scratch_bytes(), 16));
    const int tid = team.team_rank();
    const Block block(tid);
    const std::int64_t j0 = std::int64_t(team.league_rank()) * team_cols;
    const std::int64_t total = product.depth();
    // The next step's operands wait in registers while this step runs, so the memory latency
    // overlaps the arithmetic; one barrier per step.
    WeightRuns next_b;
    typename Samples::raw_type next_a[sample_runs];
    const auto load = [&](std::int64_t k0) {
      next_b.load(product.b, tid, k0, j0);
      for (int j = 0; j < sample_runs; ++j) {
        const int q = tid + j * team_size;
        next_a[j] = product.a.fetch(k0 + sample_depth(q), sample_of(q));
      }
    };
    const auto stage = [&](float* buffer, std::int64_t k0) {
      next_b.stage(product.b, tid, k0, j0, buffer + max_samples * sample_stride);
      for (int j = 0; j < sample_runs; ++j) {
        const int q = tid + j * team_size;
        *reinterpret_cast<Float4*>(buffer + sample_of(q) * sample_stride + sample_depth(q)) =
            product.a.expand(next_a[j]);
      }
    };
    float acc[block_cols][block_samples] = {};
    const std::int64_t steps = (total + step_depth - 1) / step_depth;
    if (steps > 0) {
      load(0);
      stage(scratch, 0);
    }
    team.team_barrier();
    for (std::int64_t step = 0; step < steps; ++step) {
      const float* as = scratch + (step % 2) * stage_floats;
      const float* bs = as + max_samples * sample_stride;
      const std::int64_t next = (step + 1) * step_depth;
      const int depth = int(Kokkos::min(std::int64_t(step_depth), total - step * step_depth));
      if (step + 1 < steps) load(next);
      if (WeightRuns::whole_steps_only || depth == step_depth) {
        step_fma<step_depth>(acc, as, bs, block);  // unrolled: loads scheduled ahead
      } else {
        step_fma<0>(acc, as, bs, block, depth);
      }
      if (step + 1 < steps) stage(scratch + ((step + 1) % 2) * stage_floats, next);
      team.team_barrier();
    }
    for (int r = 0; r < block_cols; ++r) {
      const std::int64_t j = j0 + block.col + Block::col_step * r;
      for (int s = 0; s < block_samples; ++s) {
        const std::int64_t m = block.sample + s;
        if (j < product.cols() && m < product.rows()) product.store(m, j, acc[r][s]);
      }
    }
  }

  /// Whether this kernel serves a product of `samples` samples.
  static bool serves(std::int64_t samples) { return samples > 0 && samples <= max_samples; }

  void run(const ExecSpace& space, const char* label) const {
    const std::int64_t cols = product.cols(), teams = (cols + team_cols - 1) / team_cols;
    if (teams == 0) return;
    const auto launch = [&](auto policy) {
      Kokkos::parallel_for(label, policy.set_scratch_size(0, Kokkos::PerTeam(scratch_bytes())),
                           *this);
    };
    if (cols % team_cols == 0 && product.b.covers(cols - team_cols, team_cols, step_depth) &&
        product.b.pair_aligned()) {
      launch(policy_for<WholeSteps>(space, teams, team_size));
    } else {
      launch(policy_type(space, teams, team_size));
    }
  }
};

}  // namespace TernaryCounter::Impl
