// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The integer products (SPEC §6) on NVIDIA tensor cores (sm_80 and later), in one kernel: the
// operands go from global memory into shared memory tile by tile (the packed codes decoded to
// int8 on the way: no decoded copy of W in memory), 8-bit MMAs (mma.sync m16n8k32, int32
// accumulators in registers) form the sums, and the epilogue turns each sum into its output as
// it stores (no int32 product in memory). The sums are integer sums, exact in any order, so the
// results are the other engines' to the bit.
//
// A team of 256 threads (8 warps, 2 x 4) takes a 128 x 128 tile of the output over the whole
// depth, 64 deep at a time: while the warps multiply one depth slice from shared memory, each
// thread holds the next slice's global loads in registers and then stages them into the other
// of two shared buffers (one barrier per slice). Fragments load by ldmatrix; shared rows are 80
// bytes apart, so the 8 rows of each of its 8 x 16-byte matrices fall on distinct banks.
#pragma once

#include "TernaryCounter_Codes.hpp"
#include "TernaryCounter_PackedState.hpp"
#include "engines/TernaryCounter_IntegerOperands.hpp"
#include "engines/TernaryCounter_PackedBytes.hpp"
#include "engines/TernaryCounter_Unroll.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

/// The engine's tile: output rows (samples), output columns, depth per shared slice, the shared
/// row pitch in bytes, and the team's threads.
struct TensorCoreTile {
  static constexpr int rows = 128, cols = 128, depth = 64, pitch = 80, threads = 256;
  static constexpr int slice_bytes = rows * pitch;  // one operand's shared slice (rows == cols)
};

/// 16 bytes, moved by one 128-bit load or store.
struct alignas(16) Bytes16 {
  std::uint32_t v[4];
};

/// An operand already in int8 with the depth contiguous: rows of q [R, Kp] (Kp a multiple of
/// the tile's depth), zeros past its rows. Each thread stages two 16-byte pieces of a slice.
template <class Mem>
struct Int8TileRows {
  Kokkos::View<const std::int8_t**, Kokkos::LayoutRight, Mem> q;

  struct Staged {
    Bytes16 v[2];
  };
  KOKKOS_INLINE_FUNCTION Staged fetch(std::int64_t first, std::int64_t k0, int thread) const {
    Staged s;
    TERNARYCOUNTER_UNROLL
    for (int j = 0; j < 2; ++j) {
      const std::int64_t r = first + thread / 4 + 64 * j;
      s.v[j] = r < std::int64_t(q.extent(0))
                   ? *reinterpret_cast<const Bytes16*>(&q(r, k0 + 16 * (thread % 4)))
                   : Bytes16{};
    }
    return s;
  }
  KOKKOS_INLINE_FUNCTION void commit(const Staged& s, std::uint8_t* slice, int thread) const {
    TERNARYCOUNTER_UNROLL
    for (int j = 0; j < 2; ++j) {
      *reinterpret_cast<Bytes16*>(slice + (thread / 4 + 64 * j) * TensorCoreTile::pitch +
                                  16 * (thread % 4)) = s.v[j];
    }
  }
};

/// W's packed codes as the weight loaders read them: 16 weights (12 aligned bytes, `in` a
/// multiple of 16) at a time.
template <class Mem>
struct PackedWeights {
  Kokkos::View<const std::uint8_t**, Kokkos::LayoutRight, Mem> codes;
  int C = 8;

  KOKKOS_INLINE_FUNCTION std::int64_t out() const { return codes.extent(0); }
  KOKKOS_INLINE_FUNCTION std::int64_t in() const { return codes.extent(1) / 3 * 4; }
  /// The codes of weights [i, i + 16) of row o as three words; zeros where not `valid`.
  KOKKOS_INLINE_FUNCTION void load(std::int64_t o, std::int64_t i, bool valid,
                                   std::uint32_t w[3]) const {
    const std::uint32_t* words =
        reinterpret_cast<const std::uint32_t*>(&codes(valid ? o : 0, valid ? 12 * (i / 16) : 0));
    TERNARYCOUNTER_UNROLL
    for (int e = 0; e < 3; ++e) w[e] = valid ? words[e] : 0u;
  }
  /// The 16 weights of load()'s words as 4 words of int8 t; zeros where not `valid` (zero codes
  /// would decode to t = -1).
  KOKKOS_INLINE_FUNCTION void decode(const std::uint32_t w[3], bool valid,
                                     std::uint32_t t[4]) const {
    const std::uint32_t lv = std::uint32_t(counter_levels(C));
    const std::uint32_t above_lv = (128u - lv) * 0x01010101u;
    const std::uint32_t above_2lv = (128u - 2 * lv) * 0x01010101u;
    std::uint32_t g[4];
    split_groups(w, g);
    TERNARYCOUNTER_UNROLL
    for (int q = 0; q < 4; ++q) t[q] = valid ? ternary_bytes(g[q], above_lv, above_2lv) : 0u;
  }
};

/// forward's B: rows of W (output column o = row, depth = input column i), decoded from the
/// codes as they are staged. Each thread stages two pieces of 16 weights, zeros past W's rows
/// and past `in`.
template <class Mem>
struct WeightTileRows {
  PackedWeights<Mem> weights;

  struct Staged {
    std::uint32_t w[2][3];
    bool valid[2];
  };
  KOKKOS_INLINE_FUNCTION Staged fetch(std::int64_t first, std::int64_t k0, int thread) const {
    Staged s;
    const std::int64_t k = k0 + 16 * (thread % 4);
    TERNARYCOUNTER_UNROLL
    for (int j = 0; j < 2; ++j) {
      const std::int64_t o = first + thread / 4 + 64 * j;
      s.valid[j] = o < weights.out() && k < weights.in();
      weights.load(o, k, s.valid[j], s.w[j]);
    }
    return s;
  }
  KOKKOS_INLINE_FUNCTION void commit(const Staged& s, std::uint8_t* slice, int thread) const {
    TERNARYCOUNTER_UNROLL
    for (int j = 0; j < 2; ++j) {
      Bytes16 t;
      weights.decode(s.w[j], s.valid[j], t.v);
      *reinterpret_cast<Bytes16*>(slice + (thread / 4 + 64 * j) * TensorCoreTile::pitch +
                                  16 * (thread % 4)) = t;
    }
  }
};

/// backward_input's B: columns of W (output column i, depth = output row o), decoded and
/// transposed as they are staged. A thread of the first half stages 16 columns of 4 consecutive
/// rows and transposes them by 4 x 4 bytes.
template <class Mem>
struct WeightTileColumns {
  PackedWeights<Mem> weights;

  struct Staged {
    std::uint32_t w[4][3];
    bool valid[4];
  };
  // thread < 128: rows k0 + 4 (thread % 16) + r, columns first + 16 (thread / 16) + [0, 16).
  KOKKOS_INLINE_FUNCTION Staged fetch(std::int64_t first, std::int64_t k0, int thread) const {
    Staged s;
    const std::int64_t i = first + 16 * (thread / 16);
    TERNARYCOUNTER_UNROLL
    for (int r = 0; r < 4; ++r) {
      const std::int64_t o = k0 + 4 * (thread % 16) + r;
      s.valid[r] = thread < 128 && o < weights.out() && i < weights.in();
      weights.load(o, i, s.valid[r], s.w[r]);
    }
    return s;
  }
  KOKKOS_INLINE_FUNCTION void commit(const Staged& s, std::uint8_t* slice, int thread) const {
    if (thread >= 128) return;
    std::uint32_t t[4][4];  // t[r][q]: row r's weights of columns 4q .. 4q + 3
    TERNARYCOUNTER_UNROLL
    for (int r = 0; r < 4; ++r) weights.decode(s.w[r], s.valid[r], t[r]);
    const int col0 = 16 * (thread / 16), row0 = 4 * (thread % 16);
    TERNARYCOUNTER_UNROLL
    for (int q = 0; q < 4; ++q) {
      const std::uint32_t x[4] = {t[0][q], t[1][q], t[2][q], t[3][q]};
      std::uint32_t y[4];
      transpose_bytes(x, y);
      TERNARYCOUNTER_UNROLL
      for (int e = 0; e < 4; ++e) {
        *reinterpret_cast<std::uint32_t*>(slice + (col0 + 4 * q + e) * TensorCoreTile::pitch +
                                          row0) = y[e];
      }
    }
  }
};

/// c += a b^T of one 16 x 8 x 32 int8 MMA (fragments as PTX's m16n8k32 .row.col .s8).
KOKKOS_INLINE_FUNCTION void mma_16x8x32(std::int32_t c[4], const std::uint32_t a[4],
                                        const std::uint32_t b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  (void)c, (void)a, (void)b;
#endif
}

/// The four 8 x 16-byte matrices at the lanes' row addresses in shared memory (ldmatrix .x4):
/// lane l receives bytes 4 (l % 4) .. + 3 of row l / 4 of each, an m16n8k32 fragment's layout.
KOKKOS_INLINE_FUNCTION void load_matrices(const std::uint8_t* row, std::uint32_t r[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address)
               : "memory");
#else
  (void)row;
  for (int e = 0; e < 4; ++e) r[e] = 0;
#endif
}

/// out(r, c) = epilogue of sum over k of A[r, k] B[c, k], for r < rows, c < cols: A and B staged
/// by their loaders (A: rows of the output; B: its columns), depth `depth` (a multiple of 64,
/// both operands zero past their own depth).
template <class ExecSpace, class ALoad, class BLoad, class Epilogue>
struct TensorCoreInt8Product {
  using Tile = TensorCoreTile;
  using Policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<Tile::threads, 2>>;
  using member_type = typename Policy::member_type;
  ALoad a;
  BLoad b;
  Epilogue epilogue;
  std::int64_t rows = 0, cols = 0, depth = 0;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const std::int64_t col_tiles = (cols + Tile::cols - 1) / Tile::cols;
    const std::int64_t r0 = team.league_rank() / col_tiles * Tile::rows;
    const std::int64_t c0 = team.league_rank() % col_tiles * Tile::cols;
    const int thread = team.team_rank(), lane = thread % 32, warp = thread / 32;
    const int wr = warp % 2 * 64, wc = warp / 2 * 32;  // the warp's 64 x 32 of the tile
    const int g = lane / 4;                            // the accumulators' row
    // Two stages of A's and B's slices: a slice is staged into one while the MMAs read the other.
    std::uint8_t* slices = static_cast<std::uint8_t*>(
        team.team_scratch(0).get_shmem_aligned(4 * Tile::slice_bytes, 16));
    // Each lane's row address of ldmatrix's four 8 x 16-byte matrices: A's (rows +0 / +8, depth
    // +0 / +16) are one m16n8k32 fragment; B's two 8-column fragments (columns +0 / +8).
    const int a_row = wr + lane % 8 + 8 * (lane / 8 % 2), a_depth = 16 * (lane / 16);
    const int b_row = wc + lane % 8 + 8 * (lane / 16), b_depth = 16 * (lane / 8 % 2);
    std::int32_t acc[4][4][4] = {};
    a.commit(a.fetch(r0, 0, thread), slices, thread);
    b.commit(b.fetch(c0, 0, thread), slices + Tile::slice_bytes, thread);
    team.team_barrier();
    int stage = 0;
    for (std::int64_t k0 = 0; k0 < depth; k0 += Tile::depth) {
      const bool more = k0 + Tile::depth < depth;
      typename ALoad::Staged a_next;
      typename BLoad::Staged b_next;
      if (more) {  // the next slice's loads, in flight behind the MMAs
        a_next = a.fetch(r0, k0 + Tile::depth, thread);
        b_next = b.fetch(c0, k0 + Tile::depth, thread);
      }
      const std::uint8_t* a_slice = slices + 2 * stage * Tile::slice_bytes;
      const std::uint8_t* b_slice = a_slice + Tile::slice_bytes;
      TERNARYCOUNTER_UNROLL
      for (int ks = 0; ks < Tile::depth; ks += 32) {
        std::uint32_t af[4][4], bf[4][2];
        TERNARYCOUNTER_UNROLL
        for (int i = 0; i < 4; ++i) {
          load_matrices(a_slice + (a_row + 16 * i) * Tile::pitch + ks + a_depth, af[i]);
        }
        TERNARYCOUNTER_UNROLL
        for (int j = 0; j < 4; j += 2) {
          std::uint32_t pair[4];
          load_matrices(b_slice + (b_row + 8 * j) * Tile::pitch + ks + b_depth, pair);
          bf[j][0] = pair[0], bf[j][1] = pair[1], bf[j + 1][0] = pair[2], bf[j + 1][1] = pair[3];
        }
        TERNARYCOUNTER_UNROLL
        for (int i = 0; i < 4; ++i) {
          TERNARYCOUNTER_UNROLL
          for (int j = 0; j < 4; ++j) mma_16x8x32(acc[i][j], af[i], bf[j]);
        }
      }
      if (more) {  // into the other stage, which every warp finished reading before the barrier
        stage ^= 1;
        std::uint8_t* next = slices + 2 * stage * Tile::slice_bytes;
        a.commit(a_next, next, thread);
        b.commit(b_next, next + Tile::slice_bytes, thread);
      }
      team.team_barrier();
    }
    TERNARYCOUNTER_UNROLL
    for (int i = 0; i < 4; ++i) {
      TERNARYCOUNTER_UNROLL
      for (int j = 0; j < 4; ++j) {
        const std::int64_t c = c0 + wc + 8 * j + lane % 4 * 2;
        TERNARYCOUNTER_UNROLL
        for (int h = 0; h < 2; ++h) {
          const std::int64_t r = r0 + wr + 16 * i + g + 8 * h;
          if (r >= rows) continue;
          if (c < cols) epilogue.store(r, c, acc[i][j][2 * h]);
          if (c + 1 < cols) epilogue.store(r, c + 1, acc[i][j][2 * h + 1]);
        }
      }
    }
  }

  void run(const ExecSpace& space, const char* label) const {
    if (rows == 0 || cols == 0) return;
    const std::int64_t tiles =
        (rows + Tile::rows - 1) / Tile::rows * ((cols + Tile::cols - 1) / Tile::cols);
    Kokkos::parallel_for(label,
                         Policy(space, tiles, Tile::threads)
                             .set_scratch_size(0, Kokkos::PerTeam(4 * Tile::slice_bytes + 16)),
                         *this);
  }
};

/// Whether the tensor-core engine serves a layer of `in` inputs (forward's depth,
/// backward_input's columns): 16 weights must be 12 aligned bytes.
inline bool tensor_core_int8_serves(std::int64_t in) {
  return in % 16 == 0;
}

}  // namespace TernaryCounter::Impl
