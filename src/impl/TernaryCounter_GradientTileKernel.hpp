// The gradient GEMM of update_from_io: rows[r, i] = sum_m grad_out[m, first_row + r] * x[m, i],
// each element one fma chain over m ascending (SPEC §3 step 1), tiled for reuse.
//
// A team owns a tile_rows x tile_cols tile of gradient rows and walks m in steps of tile_depth,
// staging the grad_out and x slices of each step in team scratch. Each thread owns register
// micro-tiles. On GPUs (register_accumulators) a thread keeps one micro-tile live over all m
// and the next slices are prefetched into registers while the current ones are used; on host
// backends one thread walks all micro-tiles of the tile, accumulating into team scratch.
#pragma once

#include "TernaryCounter_Tiling.hpp"
#include "impl/TernaryCounter_Float4.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

// Fully unrolled micro-tile loops keep the accumulators in registers.
#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__clang__)
#define TERNARYCOUNTER_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define TERNARYCOUNTER_UNROLL _Pragma("GCC unroll 16")
#else
#define TERNARYCOUNTER_UNROLL
#endif

namespace TernaryCounter::Impl {

template <class ExecSpace, class TileTraits = Tiling<ExecSpace>>
struct GradientTileKernel {
  using T = TileTraits;
  using memory_space = typename ExecSpace::memory_space;
  static constexpr int TR = T::tile_rows, TC = T::tile_cols, D = T::tile_depth;
  static constexpr int MR = T::micro_rows, MC = T::micro_cols;
  static constexpr int MR_PART = MR / T::row_split, MC_PART = MC / T::col_split;
  static constexpr int MICRO_COLS = TC / MC;  ///< micro-tiles across a tile
  static constexpr int MICRO_TILES = (TR / MR) * MICRO_COLS;
  static constexpr int team_size = T::register_accumulators ? MICRO_TILES : 1;
  static constexpr int A_VECTORS = D * TR / 4 / team_size;  ///< float4 of A a thread stages
  static constexpr int B_VECTORS = D * TC / 4 / team_size;

  // GPUs: cap registers so that two teams share a multiprocessor.
  using policy_type =
      std::conditional_t<T::register_accumulators,
                         Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<team_size, 2>>,
                         Kokkos::TeamPolicy<ExecSpace>>;
  using member_type = typename policy_type::member_type;
  using input_view = Kokkos::View<const float**, Kokkos::LayoutRight, memory_space>;
  using rows_view = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;

  static_assert(TR % MR == 0 && TC % MC == 0, "micro-tiles must tile the team tile");
  static_assert(!T::register_accumulators || (MR_PART % 4 == 0 && MC_PART % 4 == 0),
                "GPU micro-tile parts are read as float4");
  static_assert(!T::register_accumulators ||
                    ((D * TR / 4) % team_size == 0 && (D * TC / 4) % team_size == 0),
                "GPU staging must split into whole float4 per thread");

  input_view x;                ///< [M, in]
  input_view grad_out;         ///< [M, out]
  rows_view rows;              ///< [chunk_rows, in] output
  std::int64_t first_row = 0;  ///< column of grad_out that feeds rows(0, :)
  bool vector_a = false;       ///< grad_out rows may be read as aligned float4 (set by run)
  bool vector_b = false;       ///< x rows likewise

  KOKKOS_INLINE_FUNCTION std::int64_t M() const { return x.extent(0); }
  KOKKOS_INLINE_FUNCTION std::int64_t in() const { return x.extent(1); }
  KOKKOS_INLINE_FUNCTION std::int64_t chunk_rows() const { return rows.extent(0); }
  KOKKOS_INLINE_FUNCTION std::int64_t col_tiles() const { return (in() + TC - 1) / TC; }

  static constexpr std::size_t stage_floats = std::size_t(D) * (TR + TC);
  KOKKOS_INLINE_FUNCTION static std::size_t scratch_bytes() {
    const std::size_t stages = T::register_accumulators ? 2 : 1;
    const std::size_t acc = T::register_accumulators ? 0 : std::size_t(TR) * TC;
    return sizeof(float) * (stages * stage_floats + acc) + 16;
  }

  // Position of element e (f) of micro-tile row ty (column tx) inside the team tile.
  KOKKOS_INLINE_FUNCTION static int row_of(int ty, int e) {
    return (e / MR_PART) * (TR / T::row_split) + ty * MR_PART + e % MR_PART;
  }
  KOKKOS_INLINE_FUNCTION static int col_of(int tx, int f) {
    return (f / MC_PART) * (TC / T::col_split) + tx * MC_PART + f % MC_PART;
  }

  // Staged float4 q of a step starting at sample m0 (A: grad_out slice, B: x slice), zero past
  // the matrix edges (results there are never stored).
  KOKKOS_INLINE_FUNCTION Float4 a_vector(std::int64_t m0, std::int64_t row0, int q) const {
    const std::int64_t m = m0 + q / (TR / 4), r = row0 + 4 * (q % (TR / 4));
    if (vector_a && m < M() && r + 3 < chunk_rows()) {
      return *reinterpret_cast<const Float4*>(&grad_out(m, first_row + r));
    }
    Float4 v;
    for (int j = 0; j < 4; ++j) {
      v.v[j] = (m < M() && r + j < chunk_rows()) ? grad_out(m, first_row + r + j) : 0.0f;
    }
    return v;
  }
  KOKKOS_INLINE_FUNCTION Float4 b_vector(std::int64_t m0, std::int64_t col0, int q) const {
    const std::int64_t m = m0 + q / (TC / 4), c = col0 + 4 * (q % (TC / 4));
    if (vector_b && m < M() && c + 3 < in()) {
      return *reinterpret_cast<const Float4*>(&x(m, c));
    }
    Float4 v;
    for (int j = 0; j < 4; ++j) v.v[j] = (m < M() && c + j < in()) ? x(m, c + j) : 0.0f;
    return v;
  }

  /// acc[e][f] = fma(A[kk][row e], B[kk][col f], acc[e][f]) for kk ascending, kk < depth.
  template <bool FullDepth>
  KOKKOS_INLINE_FUNCTION static void micro_fma(float (&acc)[MR][MC], const float* As,
                                               const float* Bs, int ty, int tx, int depth) {
    const int steps = FullDepth ? D : depth;
    TERNARYCOUNTER_UNROLL
    for (int kk = 0; kk < steps; ++kk) {
      if constexpr (T::register_accumulators) {
        // GPU: 16-byte shared-memory reads.
        float a[MR], b[MC];
        TERNARYCOUNTER_UNROLL
        for (int e = 0; e < MR; e += 4) {
          const Float4 q = *reinterpret_cast<const Float4*>(As + kk * TR + row_of(ty, e));
          TERNARYCOUNTER_UNROLL
          for (int j = 0; j < 4; ++j) a[e + j] = q.v[j];
        }
        TERNARYCOUNTER_UNROLL
        for (int f = 0; f < MC; f += 4) {
          const Float4 q = *reinterpret_cast<const Float4*>(Bs + kk * TC + col_of(tx, f));
          TERNARYCOUNTER_UNROLL
          for (int j = 0; j < 4; ++j) b[f + j] = q.v[j];
        }
        TERNARYCOUNTER_UNROLL
        for (int e = 0; e < MR; ++e) {
          TERNARYCOUNTER_UNROLL
          for (int f = 0; f < MC; ++f) acc[e][f] = Kokkos::fma(a[e], b[f], acc[e][f]);
        }
      } else {
        // CPU: one row of A at a time, so that the accumulators, the B vectors and a single
        // broadcast fit in the vector registers.
        float b[MC];
        TERNARYCOUNTER_UNROLL
        for (int f = 0; f < MC; ++f) b[f] = Bs[kk * TC + col_of(tx, f)];
        TERNARYCOUNTER_UNROLL
        for (int e = 0; e < MR; ++e) {
          const float a = As[kk * TR + row_of(ty, e)];
          TERNARYCOUNTER_UNROLL
          for (int f = 0; f < MC; ++f) acc[e][f] = Kokkos::fma(a, b[f], acc[e][f]);
        }
      }
    }
  }

  KOKKOS_INLINE_FUNCTION void store_micro_tile(const float (&acc)[MR][MC], std::int64_t row0,
                                               std::int64_t col0, int ty, int tx) const {
    TERNARYCOUNTER_UNROLL
    for (int e = 0; e < MR; ++e) {
      const std::int64_t r = row0 + row_of(ty, e);
      if (r >= chunk_rows()) continue;
      TERNARYCOUNTER_UNROLL
      for (int f = 0; f < MC; ++f) {
        const std::int64_t c = col0 + col_of(tx, f);
        if (c < in()) rows(r, c) = acc[e][f];
      }
    }
  }

  KOKKOS_FUNCTION void operator()(const member_type& team) const {
    const std::int64_t row0 = (team.league_rank() / col_tiles()) * TR;
    const std::int64_t col0 = (team.league_rank() % col_tiles()) * TC;
    auto* scratch = static_cast<float*>(team.team_shmem().get_shmem_aligned(scratch_bytes(), 16));
    if constexpr (T::register_accumulators) {
      gpu_tile(team, scratch, row0, col0);
    } else {
      host_tile(team, scratch, row0, col0);
    }
  }

  // One live micro-tile per thread; the next step's slices go through registers into the
  // other scratch buffer, so one barrier per step suffices.
  KOKKOS_INLINE_FUNCTION void gpu_tile(const member_type& team, float* scratch, std::int64_t row0,
                                       std::int64_t col0) const {
    const int tid = team.team_rank();
    const int ty = tid / MICRO_COLS, tx = tid % MICRO_COLS;
    float acc[MR][MC];
    TERNARYCOUNTER_UNROLL
    for (int e = 0; e < MR; ++e) {
      TERNARYCOUNTER_UNROLL
      for (int f = 0; f < MC; ++f) acc[e][f] = 0.0f;
    }
    Float4 next_a[A_VECTORS], next_b[B_VECTORS];
    const auto load = [&](std::int64_t m0) {
      TERNARYCOUNTER_UNROLL
      for (int j = 0; j < A_VECTORS; ++j) next_a[j] = a_vector(m0, row0, tid + j * team_size);
      TERNARYCOUNTER_UNROLL
      for (int j = 0; j < B_VECTORS; ++j) next_b[j] = b_vector(m0, col0, tid + j * team_size);
    };
    const auto stage = [&](float* buffer) {
      auto* a = reinterpret_cast<Float4*>(buffer);
      auto* b = reinterpret_cast<Float4*>(buffer + D * TR);
      TERNARYCOUNTER_UNROLL
      for (int j = 0; j < A_VECTORS; ++j) a[tid + j * team_size] = next_a[j];
      TERNARYCOUNTER_UNROLL
      for (int j = 0; j < B_VECTORS; ++j) b[tid + j * team_size] = next_b[j];
    };
    const std::int64_t steps = (M() + D - 1) / D;
    if (steps > 0) {
      load(0);
      stage(scratch);
    }
    team.team_barrier();
    for (std::int64_t s = 0; s < steps; ++s) {
      float* current = scratch + (s % 2) * stage_floats;
      const bool more = s + 1 < steps;
      if (more) load((s + 1) * D);
      if (more || M() % D == 0) {
        micro_fma<true>(acc, current, current + D * TR, ty, tx, D);
      } else {
        micro_fma<false>(acc, current, current + D * TR, ty, tx, int(M() - s * D));
      }
      if (more) stage(scratch + ((s + 1) % 2) * stage_floats);
      team.team_barrier();
    }
    store_micro_tile(acc, row0, col0, ty, tx);
  }

  // Copies rows m0 .. m0+depth-1 of the tile's grad_out and x slices into scratch as contiguous
  // runs, zero past the matrix edges (results there are never stored).
  KOKKOS_INLINE_FUNCTION void stage_rows(const member_type& team, float* As, float* Bs,
                                         std::int64_t m0, int depth, std::int64_t row0,
                                         std::int64_t col0) const {
    const int rows_valid = int(Kokkos::min(std::int64_t(TR), chunk_rows() - row0));
    const int cols_valid = int(Kokkos::min(std::int64_t(TC), in() - col0));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, depth), [&](int kk) {
      const float* a = &grad_out(m0 + kk, first_row + row0);
      const float* b = &x(m0 + kk, col0);
      float* a_dst = As + kk * TR;
      float* b_dst = Bs + kk * TC;
      for (int r = 0; r < rows_valid; ++r) a_dst[r] = a[r];
      for (int r = rows_valid; r < TR; ++r) a_dst[r] = 0.0f;
      for (int c = 0; c < cols_valid; ++c) b_dst[c] = b[c];
      for (int c = cols_valid; c < TC; ++c) b_dst[c] = 0.0f;
    });
  }

  // Accumulators of the whole tile in scratch; each step is staged once and every micro-tile
  // is updated from it.
  KOKKOS_INLINE_FUNCTION void host_tile(const member_type& team, float* scratch, std::int64_t row0,
                                        std::int64_t col0) const {
    float* As = scratch;
    float* Bs = scratch + D * TR;
    float* tile_acc = scratch + stage_floats;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, TR * TC),
                         [&](int q) { tile_acc[q] = 0.0f; });
    for (std::int64_t m0 = 0; m0 < M(); m0 += D) {
      const int depth = int(Kokkos::min(std::int64_t(D), M() - m0));
      team.team_barrier();
      stage_rows(team, As, Bs, m0, depth, row0, col0);
      team.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, MICRO_TILES), [&](int t) {
        const int ty = t / MICRO_COLS, tx = t % MICRO_COLS;
        float acc[MR][MC];
        for (int e = 0; e < MR; ++e)
          for (int f = 0; f < MC; ++f) acc[e][f] = tile_acc[row_of(ty, e) * TC + col_of(tx, f)];
        if (depth == D) {
          micro_fma<true>(acc, As, Bs, ty, tx, D);
        } else {
          micro_fma<false>(acc, As, Bs, ty, tx, depth);
        }
        for (int e = 0; e < MR; ++e)
          for (int f = 0; f < MC; ++f) tile_acc[row_of(ty, e) * TC + col_of(tx, f)] = acc[e][f];
      });
    }
    team.team_barrier();
    const int cols_valid = int(Kokkos::min(std::int64_t(TC), in() - col0));
    Kokkos::parallel_for(
        Kokkos::TeamThreadRange(team, int(Kokkos::min(std::int64_t(TR), chunk_rows() - row0))),
        [&](int r) {
          for (int c = 0; c < cols_valid; ++c) rows(row0 + r, col0 + c) = tile_acc[r * TC + c];
        });
  }

  void run(const ExecSpace& space) const {
    const std::int64_t tiles = tile_count(chunk_rows(), in());
    if (tiles == 0) return;
    GradientTileKernel kernel = *this;
    const auto aligned = [](const float* p) {
      return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
    };
    kernel.vector_a = aligned(grad_out.data()) && grad_out.stride(0) % 4 == 0 && first_row % 4 == 0;
    kernel.vector_b = aligned(x.data()) && x.stride(0) % 4 == 0;
    const auto policy =
        policy_type(space, tiles, team_size).set_scratch_size(0, Kokkos::PerTeam(scratch_bytes()));
    Kokkos::parallel_for("TernaryCounter::update_from_io::gradient_tiles", policy, kernel);
  }

  /// Teams of one launch over `rows` gradient rows of width `in`.
  static std::int64_t tile_count(std::int64_t rows, std::int64_t in) {
    return ((rows + TR - 1) / TR) * ((in + TC - 1) / TC);
  }
};

}  // namespace TernaryCounter::Impl
