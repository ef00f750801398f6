// forward for a few samples (M <= 16: evaluation, inference) on GPUs. There the tile engine's
// 128-row tiles would be mostly padding, and the product is bound by reading the weights, which
// are 0.75 byte per weight here against a dense layer's 4.
//
// A team owns 64 output rows. Per step of 64 input columns it stages the samples' x slice and
// the rows' decoded weights (each code decoded once per team, into scratch), then each thread
// accumulates a 2-row x 4-sample register block (a warp per 4 samples). Each element is the
// documented fma chain over the input columns in ascending order: the bits equal the tile engine's.
#pragma once

#include "TernaryCounter_Linear.hpp"
#include "impl/TernaryCounter_Float4.hpp"
#include "impl/TernaryCounter_TileOperands.hpp"
#include "impl/TernaryCounter_Unroll.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

template <class ExecSpace>
struct SmallBatchForward {
  using memory_space = typename ExecSpace::memory_space;
  using Weights = TernaryOperand<memory_space, true>;
  using Samples = MatrixOperand<memory_space, true>;
  static constexpr int max_samples = 16;
  static constexpr int lanes = 32;         ///< a warp: rows row0 + lane + 32 r
  static constexpr int block_rows = 2;     ///< rows of a thread's register block
  static constexpr int block_samples = 4;  ///< samples of a thread's register block (a warp's)
  static constexpr int team_rows = lanes * block_rows;
  static constexpr int team_size = lanes * (max_samples / block_samples);
  static constexpr int step_cols = 64;                 ///< input columns staged per step
  static constexpr int weight_stride = step_cols + 4;  ///< padded: conflict-free row reads
  static constexpr int weight_runs = team_rows * step_cols / 4 / team_size;  ///< per thread
  static constexpr int sample_runs = max_samples * step_cols / 4 / team_size;
  static constexpr int stage_floats = max_samples * step_cols + team_rows * weight_stride;

  // Two teams per multiprocessor: even a 16384-row layer has only 256 teams, and the registers
  // beyond a 4-team budget hold the prefetched words instead of spilling them.
  using policy_type = Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<team_size, 2>>;
  using member_type = typename policy_type::member_type;

  Weights weights;  ///< t[o, i]: k = i, j = o; its scale is applied at the end
  Samples x;        ///< x(m, i): k = i, j = m
  OutputView<memory_space> y;

  KOKKOS_INLINE_FUNCTION std::int64_t samples() const { return y.extent(0); }
  KOKKOS_INLINE_FUNCTION std::int64_t out() const { return y.extent(1); }
  KOKKOS_INLINE_FUNCTION std::int64_t in() const { return x.depth; }
  KOKKOS_INLINE_FUNCTION static std::size_t scratch_bytes() {
    return sizeof(float) * 2 * stage_floats + 16;
  }

  // Run q of a step: samples' x rows are staged as [m][c], the weights' rows as [r][c].
  KOKKOS_INLINE_FUNCTION static int run_row(int q) { return q / (step_cols / 4); }
  KOKKOS_INLINE_FUNCTION static int run_col(int q) { return 4 * (q % (step_cols / 4)); }

  /// acc[r][s] = fma(x[s][c], t[r][c], acc[r][s]) for the step's columns c ascending
  /// (Cols > 0: a full step, known at compile time).
  template <int Cols>
  KOKKOS_INLINE_FUNCTION static void step_fma(float (&acc)[block_rows][block_samples],
                                              const float* xs, const float* ts, int lane, int quad,
                                              int cols = Cols) {
    TERNARYCOUNTER_UNROLL
    for (int c = 0; c < (Cols > 0 ? Cols : cols); c += 4) {  // a multiple of 4
      Float4 t[block_rows], xv[block_samples];
      for (int r = 0; r < block_rows; ++r) {
        t[r] = *reinterpret_cast<const Float4*>(ts + (lane + lanes * r) * weight_stride + c);
      }
      for (int s = 0; s < block_samples; ++s) {
        xv[s] = *reinterpret_cast<const Float4*>(xs + (block_samples * quad + s) * step_cols + c);
      }
      for (int e = 0; e < 4; ++e) {
        for (int r = 0; r < block_rows; ++r) {
          for (int s = 0; s < block_samples; ++s) {
            acc[r][s] = Kokkos::fma(xv[s].v[e], t[r].v[e], acc[r][s]);
          }
        }
      }
    }
  }

  KOKKOS_FUNCTION void operator()(const member_type& team) const {
    const std::int64_t row0 = std::int64_t(team.league_rank()) * team_rows;
    auto* scratch = static_cast<float*>(team.team_shmem().get_shmem_aligned(scratch_bytes(), 16));
    const int tid = team.team_rank();
    const int lane = tid % lanes, quad = tid / lanes;
    // The next step's operands wait in registers (weights still packed) while this step runs,
    // so the memory latency overlaps the arithmetic; one barrier per step.
    // Weights are extracted from their words when staged (that waits for the loads). A thread's
    // runs share one column offset, and a step is 48 bytes: one group_shift for all of them.
    LoadedGroup next_w[weight_runs];
    const int shift = weights.group_shift(run_col(tid));
    typename Samples::raw_type next_x[sample_runs];
    const auto load = [&](std::int64_t i0) {
      for (int j = 0; j < weight_runs; ++j) {
        const int q = tid + j * team_size;
        next_w[j] = weights.fetch_loaded(i0 + run_col(q), row0 + run_row(q));
      }
      for (int j = 0; j < sample_runs; ++j) {
        const int q = tid + j * team_size;
        next_x[j] = x.fetch(i0 + run_col(q), run_row(q));
      }
    };
    const auto stage = [&](float* buffer) {
      float* ts = buffer + max_samples * step_cols;
      for (int j = 0; j < weight_runs; ++j) {
        const int q = tid + j * team_size;
        *reinterpret_cast<Float4*>(ts + run_row(q) * weight_stride + run_col(q)) =
            weights.expand(next_w[j], shift);
      }
      for (int j = 0; j < sample_runs; ++j) {
        const int q = tid + j * team_size;
        *reinterpret_cast<Float4*>(buffer + run_row(q) * step_cols + run_col(q)) = next_x[j];
      }
    };
    float acc[block_rows][block_samples] = {};
    const std::int64_t steps = (in() + step_cols - 1) / step_cols;
    if (steps > 0) {
      load(0);
      stage(scratch);
    }
    team.team_barrier();
    for (std::int64_t step = 0; step < steps; ++step) {
      const float* xs = scratch + (step % 2) * stage_floats;
      const float* ts = xs + max_samples * step_cols;
      const int cols = int(Kokkos::min(std::int64_t(step_cols), in() - step * step_cols));
      if (step + 1 < steps) load((step + 1) * step_cols);
      if (cols == step_cols) {
        step_fma<step_cols>(acc, xs, ts, lane, quad);  // unrolled: loads scheduled ahead
      } else {
        step_fma<0>(acc, xs, ts, lane, quad, cols);
      }
      if (step + 1 < steps) stage(scratch + ((step + 1) % 2) * stage_floats);
      team.team_barrier();
    }
    for (int r = 0; r < block_rows; ++r) {
      const std::int64_t o = row0 + lane + lanes * r;
      for (int s = 0; s < block_samples; ++s) {
        const std::int64_t m = block_samples * quad + s;
        if (o < out() && m < samples()) y(m, o) = weights.scale(o) * acc[r][s];
      }
    }
  }

  /// Whether this kernel serves a forward of `samples` samples.
  static bool serves(std::int64_t samples) { return samples > 0 && samples <= max_samples; }

  void run(const ExecSpace& space) const {
    const std::int64_t teams = (out() + team_rows - 1) / team_rows;
    if (teams == 0) return;
    const auto policy =
        policy_type(space, teams, team_size).set_scratch_size(0, Kokkos::PerTeam(scratch_bytes()));
    Kokkos::parallel_for("TernaryCounter::forward::small_batch", policy, *this);
  }
};

}  // namespace TernaryCounter::Impl
