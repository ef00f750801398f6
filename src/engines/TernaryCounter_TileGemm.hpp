// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The tile GEMM engine behind the layer's three products (the update's weight gradient, forward
// and backward_input): C[r, c] = sum_k A(k, r) * B(k, c), each element one fma chain over k
// ascending, stored through the product's epilogue. The order of every chain is fixed, so tile
// sizes, team sizes and thread counts never change a bit.
//
// A Product supplies two operands (TernaryCounter_TileOperands.hpp), the extents rows(), cols()
// and depth(), and store(r, c, acc); a product whose chains continue earlier ones (an accumulated
// gradient) also supplies start(r, c), each chain's first value (else 0). A team owns a tile_rows x
// tile_cols tile and walks the depth in steps of tile_depth, staging each step's A and B slices in
// team scratch (A as [k][r], B as [k][c]). Each thread owns register micro-tiles. On GPUs
// (register_accumulators) a thread keeps one micro-tile live over the whole depth and the next
// slices are prefetched into registers while the current ones are used; on host backends one thread
// walks all micro-tiles of the tile, accumulating into team scratch. A GPU tile that lies wholly
// inside both operands runs without edge tests; a product made only of such tiles gets a kernel
// with that path alone (InsideTiles).
#pragma once

#include "engines/TernaryCounter_Float4.hpp"
#include "engines/TernaryCounter_HostIsa.hpp"
#include "engines/TernaryCounter_Tiling.hpp"
#include "engines/TernaryCounter_Unroll.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace TernaryCounter::Impl {

template <class ExecSpace, class Product, class TileTraits = Tiling<ExecSpace>>
struct TileGemm {
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

  /// Work tag of a launch whose tiles all lie inside both operands (GPUs): a kernel without the
  /// edge-tested path, whose registers then do not constrain it.
  struct InsideTiles {};

  // GPUs: cap registers so that two teams share a multiprocessor.
  template <class... Tag>
  using policy_for =
      std::conditional_t<T::register_accumulators,
                         Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<team_size, 2>, Tag...>,
                         Kokkos::TeamPolicy<ExecSpace, Tag...>>;
  using policy_type = policy_for<>;
  using member_type = typename policy_type::member_type;

  static_assert(TR % MR == 0 && TC % MC == 0, "micro-tiles must tile the team tile");
  static_assert(D % 4 == 0, "runs along the depth are four elements");
  static_assert(!T::register_accumulators || (MR_PART % 4 == 0 && MC_PART % 4 == 0),
                "GPU micro-tile parts are read as float4");
  static_assert(!T::register_accumulators ||
                    ((D * TR / 4) % team_size == 0 && (D * TC / 4) % team_size == 0),
                "GPU staging must split into whole float4 per thread");

  using A = decltype(Product::a);
  using B = decltype(Product::b);

  Product product;

  KOKKOS_INLINE_FUNCTION std::int64_t col_tiles() const { return (product.cols() + TC - 1) / TC; }

  // Where staged element (kk, j) of an operand slice lives (P = micro-tile rows or columns).
  // GPUs: k-major rows of the slice, W (+ 4 for runs along the depth, which are stored
  // transposed: the padding spreads the four threads sharing a row over the banks) floats apart.
  // Hosts: packed micro-panels (all kk of micro-tile rows j / P contiguous), which the
  // micro-kernel streams through in order, as a BLAS packs its operands.
  template <class Operand, int W, int P>
  KOKKOS_INLINE_FUNCTION static int slot(int kk, int j) {
    if constexpr (T::register_accumulators) {
      return kk * (W + (Operand::along_depth ? 4 : 0)) + j;
    } else {
      return (j / P * D + kk) * P + j % P;
    }
  }
  template <class Operand, int W>
  static constexpr int slice_floats =
      D*(W + (T::register_accumulators && Operand::along_depth ? 4 : 0));
  static constexpr int A_FLOATS = slice_floats<A, TR>, B_FLOATS = slice_floats<B, TC>;
  static constexpr std::size_t stage_floats = std::size_t(A_FLOATS) + B_FLOATS;

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

  /// GPUs: thread tid's micro-tile. A 16-byte scratch read returns 4 registers to every lane at
  /// 128 bytes per wavefront, unless lanes l and l ^ 1 (or l ^ 2) read one address: then 2. So a
  /// warp takes 4 micro-tile rows x 8 columns, lane bits 0 and 4 the row and bits 1-3 the column:
  /// lanes l, l ^ 1 share B's reads and l, l ^ 2 A's (with 2 rows x 16 columns, B's cost 4).
  /// Products of packed codes only (forward, backward_input): the gradient product's depth (the
  /// samples) may be short, and its stores, a warp's 16 micro-tile columns wide, then set its
  /// pace, which pairing slows.
  static constexpr bool codes_product = requires { typename B::CodeRun; };
  static constexpr bool paired_lanes =
      T::register_accumulators && codes_product && MICRO_COLS % 8 == 0 && (TR / MR) % 4 == 0;
  KOKKOS_INLINE_FUNCTION static int micro_row(int tid) {
    if constexpr (paired_lanes) {
      const int warp = tid / 32, lane = tid % 32;
      return 4 * (warp / (MICRO_COLS / 8)) + lane % 2 + 2 * (lane / 16);
    } else {
      return tid / MICRO_COLS;
    }
  }
  KOKKOS_INLINE_FUNCTION static int micro_col(int tid) {
    if constexpr (paired_lanes) {
      return 8 * (tid / 32 % (MICRO_COLS / 8)) + tid % 32 / 2 % 8;
    } else {
      return tid % MICRO_COLS;
    }
  }

  // Four-element run q of an operand's slice [k0, k0 + D) x [j0, j0 + W): where it starts in the
  // operand (k, j) and in the staged slice (kk, jj).
  template <class Operand, int W>
  struct Run {
    int kk, jj;
    KOKKOS_INLINE_FUNCTION explicit Run(int q) {
      if constexpr (Operand::along_depth) {
        // Consecutive threads read consecutive runs of one row of memory (coalesced loads).
        kk = 4 * (q % (D / 4));
        jj = q / (D / 4);
      } else {
        kk = q / (W / 4);
        jj = 4 * (q % (W / 4));
      }
    }
  };

  /// The run at (k, j): without edge tests when the tile lies inside the operand.
  template <bool Inside, class Operand>
  KOKKOS_INLINE_FUNCTION static typename Operand::raw_type fetch_at(const Operand& op,
                                                                    std::int64_t k,
                                                                    std::int64_t j) {
    if constexpr (Inside) {
      return op.fetch_inside(k, j);
    } else {
      return op.fetch(k, j);
    }
  }
  template <class Operand, int W, bool Inside = false>
  KOKKOS_INLINE_FUNCTION static typename Operand::raw_type fetch(const Operand& op, std::int64_t k0,
                                                                 std::int64_t j0, int q) {
    const Run<Operand, W> run(q);
    return fetch_at<Inside>(op, k0 + run.kk, j0 + run.jj);
  }

  /// GPUs, the InsideTiles kernel (gpu_tile's Pairs): an operand that fetches pairs (the packed
  /// codes of forward and backward_input) gives each thread two adjacent runs of one row, 8 codes
  /// in two loaded words (and across the depth one scale), extracted when staged, after the
  /// step's fmas. Extracting each run as it was fetched would wait for its loads before the
  /// fmas. Not in the edge-tested kernel, where the words' registers cost spills.
  template <bool Pairs>
  static constexpr bool b_pairs = Pairs&& requires(const B& b) {
    b.fetch_pair_inside(0, 0);
  };
  template <bool Pairs>
  static constexpr int B_RUNS_PER_FETCH = b_pairs<Pairs> ? 2 : 1;
  template <bool Pairs>
  static constexpr int B_FETCHES = B_VECTORS / B_RUNS_PER_FETCH<Pairs>;
  static_assert(!b_pairs<true> ||
                    (B_VECTORS % 2 == 0 && (B::along_depth ? D / 4 : TC / 4) % 2 == 0),
                "pairs of runs tile B's slice rows");
  template <class Operand, bool Pairs>
  struct Prefetched {
    using type = typename Operand::raw_type;
  };
  template <class Operand>
  struct Prefetched<Operand, true> {
    using type = decltype(std::declval<Operand>().fetch_pair_inside(0, 0));
  };
  template <bool Pairs>
  using b_prefetch_type = typename Prefetched<B, b_pairs<Pairs>>::type;

  /// The first run of thread tid's fetch f of B.
  template <bool Pairs>
  KOKKOS_INLINE_FUNCTION static int b_fetch_run(int tid, int f) {
    return B_RUNS_PER_FETCH<Pairs> * (tid + f * team_size);
  }
  /// The runs from run q on of B's slice at depth k0, as they stay in registers until staged.
  template <bool Inside, bool Pairs>
  KOKKOS_INLINE_FUNCTION b_prefetch_type<Pairs> fetch_b(std::int64_t k0, std::int64_t j0,
                                                        int q) const {
    if constexpr (b_pairs<Pairs>) {
      static_assert(Inside, "only tiles inside the operands prefetch pairs");
      const Run<B, TC> run(q);
      return product.b.fetch_pair_inside(k0 + run.kk, j0 + run.jj);
    } else {
      return fetch<B, TC, Inside>(product.b, k0, j0, q);
    }
  }
  /// Run r of those fetched from run q on.
  template <bool Pairs>
  KOKKOS_INLINE_FUNCTION Float4 expand_b(const b_prefetch_type<Pairs>& next, std::int64_t k0,
                                         std::int64_t j0, int q, int r) const {
    if constexpr (b_pairs<Pairs>) {
      const Run<B, TC> run(q);
      return product.b.expand_pair(next, k0 + run.kk, j0 + run.jj, r);
    } else {
      return product.b.expand(next);
    }
  }

  /// GPUs: stages run q of a slice (hosts stage whole slices: host_stage).
  template <class Operand, int W, int P>
  KOKKOS_INLINE_FUNCTION static void put(float* slice, int q, const Float4& v) {
    static_assert(T::register_accumulators);
    const Run<Operand, W> run(q);
    if constexpr (Operand::along_depth) {
      TERNARYCOUNTER_UNROLL
      for (int e = 0; e < 4; ++e) slice[slot<Operand, W, P>(run.kk + e, run.jj)] = v.v[e];
    } else {
      *reinterpret_cast<Float4*>(slice + slot<Operand, W, P>(run.kk, run.jj)) = v;
    }
  }
  KOKKOS_INLINE_FUNCTION static void put_a(float* buffer, int q, const Float4& v) {
    put<A, TR, MR>(buffer, q, v);
  }
  KOKKOS_INLINE_FUNCTION static void put_b(float* buffer, int q, const Float4& v) {
    put<B, TC, MC>(buffer + A_FLOATS, q, v);
  }

  /// acc[e][f] = fma(A[kk][row e], B[kk][col f], acc[e][f]) for kk ascending, kk < depth.
  template <bool FullDepth>
  KOKKOS_INLINE_FUNCTION static void micro_fma(float (&acc)[MR][MC], const float* stage, int ty,
                                               int tx, int depth) {
    const int steps = FullDepth ? D : depth;
    const float* As = stage;
    const float* Bs = stage + A_FLOATS;
    if constexpr (T::register_accumulators) {
      TERNARYCOUNTER_UNROLL
      for (int kk = 0; kk < steps; ++kk) {
        // GPU: 16-byte shared-memory reads.
        float a[MR], b[MC];
        TERNARYCOUNTER_UNROLL
        for (int e = 0; e < MR; e += 4) {
          const Float4 q =
              *reinterpret_cast<const Float4*>(As + slot<A, TR, MR>(kk, row_of(ty, e)));
          TERNARYCOUNTER_UNROLL
          for (int j = 0; j < 4; ++j) a[e + j] = q.v[j];
        }
        TERNARYCOUNTER_UNROLL
        for (int f = 0; f < MC; f += 4) {
          const Float4 q =
              *reinterpret_cast<const Float4*>(Bs + slot<B, TC, MC>(kk, col_of(tx, f)));
          TERNARYCOUNTER_UNROLL
          for (int j = 0; j < 4; ++j) b[f + j] = q.v[j];
        }
        // Rows alternately left to right and right to left: a row's last b is the next row's
        // first, which ptxas turns into fewer dispatch stalls. Each chain's order stays.
        TERNARYCOUNTER_UNROLL
        for (int e = 0; e < MR; ++e) {
          TERNARYCOUNTER_UNROLL
          for (int i = 0; i < MC; ++i) {
            const int f = e % 2 ? MC - 1 - i : i;
            acc[e][f] = Kokkos::fma(a[e], b[f], acc[e][f]);
          }
        }
      }
    } else {
      // CPU: the two micro-panels in order; one row of A at a time, so that the accumulators,
      // the B vectors and a single broadcast fit in the vector registers.
      static_assert(T::row_split == 1 && T::col_split == 1, "host micro-tiles are contiguous");
      const float* a_panel = As + ty * D * MR;
      const float* b_panel = Bs + tx * D * MC;
      TERNARYCOUNTER_UNROLL
      for (int kk = 0; kk < steps; ++kk) {
        float b[MC];
        TERNARYCOUNTER_UNROLL
        for (int f = 0; f < MC; ++f) b[f] = b_panel[kk * MC + f];
        TERNARYCOUNTER_UNROLL
        for (int e = 0; e < MR; ++e) {
          const float a = a_panel[kk * MR + e];
          TERNARYCOUNTER_UNROLL
          for (int f = 0; f < MC; ++f) acc[e][f] = Kokkos::fma(a, b[f], acc[e][f]);
        }
      }
    }
  }

  /// The first value of the chain of element (r, c): the product's start(r, c) where it has one
  /// (inside the product), else 0.
  KOKKOS_INLINE_FUNCTION float chain_start(std::int64_t r, std::int64_t c) const {
    if constexpr (requires { product.start(r, c); }) {
      return r < product.rows() && c < product.cols() ? product.start(r, c) : 0.0f;
    } else {
      return 0.0f;
    }
  }

  KOKKOS_INLINE_FUNCTION void store_micro_tile(const float (&acc)[MR][MC], std::int64_t row0,
                                               std::int64_t col0, int ty, int tx) const {
    TERNARYCOUNTER_UNROLL
    for (int e = 0; e < MR; ++e) {
      const std::int64_t r = row0 + row_of(ty, e);
      if (r >= product.rows()) continue;
      TERNARYCOUNTER_UNROLL
      for (int f = 0; f < MC; ++f) {
        const std::int64_t c = col0 + col_of(tx, f);
        if (c < product.cols()) product.store(r, c, acc[e][f]);
      }
    }
  }

  /// Team `team`'s tile: its first row and column, teams row-major over the tiles.
  KOKKOS_INLINE_FUNCTION std::int64_t tile_row0(const member_type& team) const {
    return (team.league_rank() / col_tiles()) * TR;
  }
  KOKKOS_INLINE_FUNCTION std::int64_t tile_col0(const member_type& team) const {
    return (team.league_rank() % col_tiles()) * TC;
  }
  KOKKOS_INLINE_FUNCTION static float* team_scratch(const member_type& team) {
    return static_cast<float*>(team.team_shmem().get_shmem_aligned(scratch_bytes(), 16));
  }

  /// Whether the host teams run the AVX-512 copy (Avx512Tiles).
  static constexpr bool avx512_copy = requires { T::avx512_copy; };

  KOKKOS_FUNCTION void operator()(const member_type& team) const {
    run_team_body<avx512_copy>(*this, team);
  }
  KOKKOS_FUNCTION void operator()(InsideTiles, const member_type& team) const {
    if constexpr (T::register_accumulators) {
      gpu_tile<true, true>(team, team_scratch(team), tile_row0(team), tile_col0(team));
    }
  }
  KOKKOS_INLINE_FUNCTION void team_body(const member_type& team) const {
    const std::int64_t row0 = tile_row0(team), col0 = tile_col0(team);
    float* scratch = team_scratch(team);
    if constexpr (T::register_accumulators) {
      // Team-uniform: a tile inside both operands runs without edge tests.
      if constexpr (A::inside_path || B::inside_path) {
        if (product.a.covers(row0, TR, D) && product.b.covers(col0, TC, D)) {
          gpu_tile<true>(team, scratch, row0, col0);
          return;
        }
      }
      gpu_tile<false>(team, scratch, row0, col0);
    } else {
      host_tile(team, scratch, row0, col0);
    }
  }

  // One live micro-tile per thread; the next step's slices go through registers into the
  // other scratch buffer, so one barrier per step suffices. Inside: no edge tests; Pairs: B's
  // runs prefetched in pairs where its operand does (b_pairs).
  template <bool Inside, bool Pairs = false>
  KOKKOS_INLINE_FUNCTION void gpu_tile(const member_type& team, float* scratch, std::int64_t row0,
                                       std::int64_t col0) const {
    const int tid = team.team_rank();
    const int ty = micro_row(tid), tx = micro_col(tid);
    float acc[MR][MC];
    TERNARYCOUNTER_UNROLL
    for (int e = 0; e < MR; ++e) {
      TERNARYCOUNTER_UNROLL
      for (int f = 0; f < MC; ++f)
        acc[e][f] = chain_start(row0 + row_of(ty, e), col0 + col_of(tx, f));
    }
    typename A::raw_type next_a[A_VECTORS];
    b_prefetch_type<Pairs> next_b[B_FETCHES<Pairs>];
    const auto load = [&](std::int64_t k0) {
      TERNARYCOUNTER_UNROLL
      for (int j = 0; j < A_VECTORS; ++j) {
        next_a[j] = fetch<A, TR, Inside>(product.a, k0, row0, tid + j * team_size);
      }
      TERNARYCOUNTER_UNROLL
      for (int f = 0; f < B_FETCHES<Pairs>; ++f) {
        next_b[f] = fetch_b<Inside, Pairs>(k0, col0, b_fetch_run<Pairs>(tid, f));
      }
    };
    const auto stage = [&](float* buffer, std::int64_t k0) {
      TERNARYCOUNTER_UNROLL
      for (int j = 0; j < A_VECTORS; ++j)
        put_a(buffer, tid + j * team_size, product.a.expand(next_a[j]));
      TERNARYCOUNTER_UNROLL
      for (int f = 0; f < B_FETCHES<Pairs>; ++f) {
        const int q = b_fetch_run<Pairs>(tid, f);
        TERNARYCOUNTER_UNROLL
        for (int r = 0; r < B_RUNS_PER_FETCH<Pairs>; ++r) {
          put_b(buffer, q + r, expand_b<Pairs>(next_b[f], k0, col0, q, r));
        }
      }
    };
    const std::int64_t depth = product.depth();
    const std::int64_t steps = (depth + D - 1) / D;
    if (steps > 0) {
      load(0);
      stage(scratch, 0);
    }
    team.team_barrier();
    for (std::int64_t s = 0; s < steps; ++s) {
      float* current = scratch + (s % 2) * stage_floats;
      const bool more = s + 1 < steps;
      if (more) load((s + 1) * D);
      if (more || depth % D == 0) {
        micro_fma<true>(acc, current, ty, tx, D);
      } else {
        micro_fma<false>(acc, current, ty, tx, int(depth - s * D));
      }
      if (more) stage(scratch + ((s + 1) % 2) * stage_floats, (s + 1) * D);
      team.team_barrier();
    }
    store_micro_tile(acc, row0, col0, ty, tx);
  }

  // Hosts: the first `width` j of an operand's slice [k0, k0 + D) x [j0, j0 + W), in loops the
  // compiler vectorizes. Runs across are staged in memory order (each is four consecutive
  // elements of a micro-panel row; packed codes as runs of 16, a panel row of 16 at a time);
  // runs along the depth a micro-panel at a time: the P runs of four depths, then each depth's P
  // elements as one panel row, not four scattered stores per run. A tile inside the operand
  // prefetches its next slice's lines as it goes (`next`: the depth goes on past this slice).
  template <class Operand, int W, int P>
  KOKKOS_INLINE_FUNCTION static void host_stage(const Operand& op, float* slice, std::int64_t k0,
                                                std::int64_t j0, int width, bool next) {
    if (op.covers(j0, W, D)) {
      host_stage<Operand, W, P, true>(op, slice, k0, j0, width, next);
    } else {
      host_stage<Operand, W, P, false>(op, slice, k0, j0, width, false);
    }
  }
  template <class Operand, int W, int P, bool Inside>
  KOKKOS_INLINE_FUNCTION static void host_stage(const Operand& op, float* slice, std::int64_t k0,
                                                std::int64_t j0, int width, bool next) {
    constexpr int run16 = 16;
    if constexpr (!Operand::along_depth && Inside && P % run16 == 0 &&
                  requires { op.fetch_run(k0, j0); }) {
      for (int kk = 0; kk < D; ++kk) {
        for (int jb = 0; jb < width; jb += run16) {
          if (next) op.prefetch(k0 + D + kk, j0 + jb);
          float w[run16];
          op.expand_run(op.fetch_run(k0 + kk, j0 + jb), w);
          float* panel_row = slice + slot<Operand, W, P>(kk, jb);
          TERNARYCOUNTER_UNROLL
          for (int f = 0; f < run16; ++f) panel_row[f] = w[f];
        }
      }
    } else if constexpr (!Operand::along_depth && P % 4 == 0) {
      for (int kk = 0; kk < D; ++kk) {
        for (int jb = 0; jb < width; jb += P) {
          float* panel_row = slice + slot<Operand, W, P>(kk, jb);
          TERNARYCOUNTER_UNROLL
          for (int f = 0; f < P; f += 4) {
            if (next && (jb + f) % 16 == 0) op.prefetch(k0 + D + kk, j0 + jb + f);
            const auto raw = fetch_at<Inside>(op, k0 + kk, j0 + jb + f);
            TERNARYCOUNTER_UNROLL
            for (int e = 0; e < 4; ++e) panel_row[f + e] = op.element(raw, e);
          }
        }
      }
    } else if constexpr (!Operand::along_depth) {
      // Micro-panels of 6 (AVX2 and baseline builds): a run of four may span two.
      for (int q = 0; q < D * W / 4; ++q) {
        const Run<Operand, W> run(q);
        if (run.jj >= width) continue;
        if (next && run.jj % 16 == 0) op.prefetch(k0 + D + run.kk, j0 + run.jj);
        const auto raw = fetch<Operand, W, Inside>(op, k0, j0, q);
        TERNARYCOUNTER_UNROLL
        for (int e = 0; e < 4; ++e)
          slice[slot<Operand, W, P>(run.kk, run.jj + e)] = op.element(raw, e);
      }
    } else {
      for (int jb = 0; jb < width; jb += P) {
        for (int kk = 0; kk < D; kk += 4) {
          typename Operand::raw_type raw[P];
          TERNARYCOUNTER_UNROLL
          for (int f = 0; f < P; ++f) {
            if (next && kk % 16 == 0) op.prefetch(k0 + D + kk, j0 + jb + f);
            raw[f] = fetch_at<Inside>(op, k0 + kk, j0 + jb + f);
          }
          TERNARYCOUNTER_UNROLL
          for (int e = 0; e < 4; ++e) {
            float* panel_row = slice + slot<Operand, W, P>(kk + e, jb);
            TERNARYCOUNTER_UNROLL
            for (int f = 0; f < P; ++f) panel_row[f] = op.element(raw[f], e);
          }
        }
      }
    }
  }

  // Accumulators of the whole tile in scratch; each step is staged once and every micro-tile
  // that holds a stored element is updated from it (a small product computes little padding).
  KOKKOS_INLINE_FUNCTION void host_tile(const member_type& team, float* scratch, std::int64_t row0,
                                        std::int64_t col0) const {
    float* tile_acc = scratch + stage_floats;
    const int rows_valid = int(Kokkos::min(std::int64_t(TR), product.rows() - row0));
    const int cols_valid = int(Kokkos::min(std::int64_t(TC), product.cols() - col0));
    const int micro_rows = (rows_valid + MR - 1) / MR, micro_cols = (cols_valid + MC - 1) / MC;
    const std::int64_t total = product.depth();
    if (total == 0) {  // else the first step starts the chains at zero, in registers
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows_valid * TC),
                           [&](int q) { tile_acc[q] = chain_start(row0 + q / TC, col0 + q % TC); });
    }
    for (std::int64_t k0 = 0; k0 < total; k0 += D) {
      const int depth = int(Kokkos::min(std::int64_t(D), total - k0));
      team.team_barrier();
      // Only the micro-panels that are computed below are staged.
      Kokkos::single(Kokkos::PerTeam(team), [&] {
        const bool next = k0 + D < total;
        host_stage<A, TR, MR>(product.a, scratch, k0, row0, micro_rows * MR, next);
        host_stage<B, TC, MC>(product.b, scratch + A_FLOATS, k0, col0, micro_cols * MC, next);
      });
      team.team_barrier();
      const auto update = [&](auto first) {
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, micro_rows * micro_cols), [&](int t) {
          const int ty = t / micro_cols, tx = t % micro_cols;
          float acc[MR][MC];
          for (int e = 0; e < MR; ++e)
            for (int f = 0; f < MC; ++f)
              acc[e][f] = first ? chain_start(row0 + row_of(ty, e), col0 + col_of(tx, f))
                                : tile_acc[row_of(ty, e) * TC + col_of(tx, f)];
          if (depth == D) {
            micro_fma<true>(acc, scratch, ty, tx, D);
          } else {
            micro_fma<false>(acc, scratch, ty, tx, depth);
          }
          for (int e = 0; e < MR; ++e)
            for (int f = 0; f < MC; ++f) tile_acc[row_of(ty, e) * TC + col_of(tx, f)] = acc[e][f];
        });
      };
      if (k0 == 0) {
        update(std::true_type{});
      } else {
        update(std::false_type{});
      }
    }
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows_valid), [&](int r) {
      for (int c = 0; c < cols_valid; ++c) product.store(row0 + r, col0 + c, tile_acc[r * TC + c]);
    });
  }

  /// Teams of one launch over a rows x cols product.
  static std::int64_t tile_count(std::int64_t rows, std::int64_t cols) {
    return ((rows + TR - 1) / TR) * ((cols + TC - 1) / TC);
  }

  void run(const ExecSpace& space, const char* label) const {
    const std::int64_t tiles = tile_count(product.rows(), product.cols());
    if (tiles == 0) return;
    if constexpr (T::register_accumulators && (A::inside_path || B::inside_path)) {
      // A product of whole tiles inside both operands (the usual layer shapes) runs in a kernel
      // without the edge-tested path, which otherwise costs it registers and stalls. Other
      // shapes keep one launch that picks the path per tile (a second launch for the edge tiles
      // alone would run after the first's last wave).
      const std::int64_t rows = product.rows(), cols = product.cols();
      if (rows % TR == 0 && cols % TC == 0 && product.a.covers(rows - TR, TR, D) &&
          product.b.covers(cols - TC, TC, D)) {
        launch(policy_for<InsideTiles>(space, tiles, team_size), label);
        return;
      }
    }
    launch(policy_type(space, tiles, team_size), label);
  }

  template <class Policy>
  void launch(Policy policy, const char* label) const {
    Kokkos::parallel_for(label, policy.set_scratch_size(0, Kokkos::PerTeam(scratch_bytes())),
                         *this);
  }
};

}  // namespace TernaryCounter::Impl
