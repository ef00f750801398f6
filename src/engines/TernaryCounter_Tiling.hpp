// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Per-backend tile sizes of the kernels: one kernel source, tuned through these traits.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace TernaryCounter {

/// Rows of a host micro-tile of 16 columns: its accumulators take 12 of the 16 AVX2 vector
/// registers with 6 rows, or 24 of the 32 that AVX-512 builds have with 12 rows (GCC keeps
/// 256-bit vectors there), so each loaded operand feeds more fmas. Every output's fma chain is
/// the same for any micro-tile.
inline constexpr int host_micro_rows_avx512 = 12;
#if defined(__AVX512F__)
inline constexpr int host_micro_rows = host_micro_rows_avx512;
#else
inline constexpr int host_micro_rows = 6;
#endif

/// Host tiles of Rows x Cols: one thread per team, which walks all the tile's micro-tiles and
/// keeps the tile's accumulators in team scratch.
template <int Rows, int Cols>
struct HostTiles {
  static constexpr int tile_rows = Rows;  ///< output rows of one team's gradient tile
  static constexpr int tile_cols = Cols;  ///< input columns of one team's gradient tile
  /// Depth indices staged per step: 128 halves the accumulator tile's loads and stores of 64;
  /// 256 gains nothing more.
  static constexpr int tile_depth = 128;
  static constexpr int micro_rows = host_micro_rows;  ///< rows of a thread's register micro-tile
  static constexpr int micro_cols = 16;  ///< columns of one thread's register micro-tile
  static constexpr int row_split = 1;    ///< micro-tile rows come in this many strided parts
  static constexpr int col_split = 1;    ///< micro-tile columns likewise
  static constexpr bool register_accumulators = false;  ///< one micro-tile per thread, kept live
};

/// Host backends: 384 x 512 tiles, whose accumulators (768 KiB) and staged operand slices
/// (448 KiB) stay in L2 and L3. Large tiles restage each operand fewer times than 192 x 256
/// ones, which serve only products too small to give every core a large tile.
template <class ExecSpace>
struct Tiling : HostTiles<384, 512> {
  static constexpr int update_team_size = 1;  ///< threads per row in the row update
  /// forward and backward_input of <= 16 samples by their own kernels (GPUs: FewSampleProduct
  /// over aligned rows, SmallBatchProduct otherwise; host tiles already skip the padding).
  static constexpr bool few_sample = false;
  static constexpr bool small_batch = false;
  /// Target size of the gradient-rows workspace of update_from_io.
  static constexpr std::size_t workspace_bytes = std::size_t(8) << 20;
  static constexpr int threads_per_multiprocessor = 1;  ///< concurrency() per core
  static constexpr int teams_per_multiprocessor = 1;

  /// For products with fewer large tiles than threads.
  using Small = HostTiles<192, 256>;
};

/// Host tiles with AVX-512's micro-tiles, run by the AVX-512 copy of a build without
/// architecture flags on CPUs that have it (impl/TernaryCounter_HostIsa.hpp).
template <class Tiles>
struct Avx512Tiles : Tiles {
  static constexpr int micro_rows = host_micro_rows_avx512;
  static constexpr bool avx512_copy = true;  ///< the kernel runs its AVX-512 copy
};

/// GPUs: 256 threads, each holding an 8x8 register micro-tile of a 128x128 tile; the micro-tile
/// is split in 4x4 quarters 64 apart so shared-memory reads are 16-byte and conflict-free.
struct GpuTiling {
  static constexpr int tile_rows = 128;
  static constexpr int tile_cols = 128;
  static constexpr int tile_depth = 16;
  static constexpr int micro_rows = 8;
  static constexpr int micro_cols = 8;
  static constexpr int row_split = 2;
  static constexpr int col_split = 2;
  static constexpr bool register_accumulators = true;
  /// Most threads per row by default: one 8-group unit per thread (whole warps) up to this
  /// many; rows of up to 4096 weights run register-capped, 8 teams per multiprocessor
  /// (RowUpdateKernel::capped_team_size). A team wider than its row's units leaves threads
  /// idle. The threads read their units from memory twice, so beyond 256 units a team of 256
  /// threads, each looping over several units, beats one unit per thread, whose teams of 352 or
  /// 512 threads fit only two per multiprocessor.
  static constexpr int update_team_size = 256;
  static constexpr bool few_sample = true;
  static constexpr bool small_batch = true;
  /// Large enough that a big layer is a few chunks (each chunk is two launches).
  static constexpr std::size_t workspace_bytes = std::size_t(256) << 20;
  static constexpr int threads_per_multiprocessor = 2048;  ///< concurrency() per multiprocessor
  static constexpr int teams_per_multiprocessor = 2;       ///< resident gradient teams (registers)

  /// For problems too small to give every multiprocessor a 128x128 tile: 64x128 tiles of 4x8.
  struct Small {
    static constexpr int tile_rows = 64;
    static constexpr int tile_cols = 128;
    static constexpr int tile_depth = 16;
    static constexpr int micro_rows = 4;
    static constexpr int micro_cols = 8;
    static constexpr int row_split = 1;
    static constexpr int col_split = 2;
    static constexpr bool register_accumulators = true;
  };
};

#ifdef KOKKOS_ENABLE_CUDA
template <>
struct Tiling<Kokkos::Cuda> : GpuTiling {};
#endif
#ifdef KOKKOS_ENABLE_HIP
/// FewSampleProduct gives 32-thread warps different roles that reach barriers from different
/// code; a 64-wide wavefront would hold two roles (docs/DESIGN.md, "Hardware assumptions"). On
/// HIP SmallBatchProduct, whose threads all take one path, serves every product of <= 16 samples.
template <>
struct Tiling<Kokkos::HIP> : GpuTiling {
  static constexpr bool few_sample = false;
};
#endif

}  // namespace TernaryCounter
