// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The integer products on a vendor's int8 GEMM (CUDA: cuBLAS, tensor cores). The GEMM reads int8
// matrices with the depth contiguous, so the ternary weights are decoded into such a matrix one
// block at a time, in a scratch of at most decoded_block_bytes (never an int8 copy of all of a
// large W): forward decodes blocks of W's rows, backward_input blocks of W's columns, transposed.
// The GEMM writes its int32 sums into the output's own memory and one pass of the epilogue turns
// each into its float in place (the same element, the same thread): no int32 copy of the output.
#pragma once

#include "TernaryCounter_Codes.hpp"
#include "engines/TernaryCounter_IntegerOperands.hpp"
#include "engines/TernaryCounter_RowsByLanes.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>

namespace TernaryCounter::Impl {

/// The decoded weights' scratch: a block holds at most this many bytes (or one 64-row tile).
inline constexpr std::int64_t decoded_block_bytes = std::int64_t(32) << 20;
inline constexpr std::int64_t decoded_tile = 64;

/// Rows of a block of `depth`-deep decoded rows: a multiple of the tile, within the scratch.
inline std::int64_t decoded_block_rows(std::int64_t rows, std::int64_t depth) {
  const std::int64_t fit =
      std::max<std::int64_t>(decoded_tile, decoded_block_bytes / std::max<std::int64_t>(depth, 1) /
                                               decoded_tile * decoded_tile);
  return std::min((rows + decoded_tile - 1) / decoded_tile * decoded_tile, fit);
}

/// dst(r, k) = t[first + r, k] for r < count, 0 for k past `in` (forward's B: W's rows). A team
/// per row, a thread per group of 4 codes (one 32-bit word of dst).
template <class ExecSpace>
struct DecodeWeightRows {
  using Mem = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  Kokkos::View<const std::uint8_t**, Kokkos::LayoutRight, Mem> codes;
  int C = 8;
  Int8Matrix<Mem> dst;
  std::int64_t first = 0, count = 0;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const std::int64_t r = team.league_rank(), groups = codes.extent(1) / 3;
    const std::uint8_t* row = &codes(first + r, 0);
    std::uint32_t* out = reinterpret_cast<std::uint32_t*>(&dst(r, 0));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, dst.extent(1) / 4), [&](std::int64_t g) {
      std::uint32_t packed = 0;
      if (g < groups) {
        const std::uint32_t word = load_group(row + 3 * g);
        for (int e = 0; e < 4; ++e) {
          packed |= std::uint32_t(std::uint8_t(decode_ternary(group_code(word, e), C))) << (8 * e);
        }
      }
      out[g] = packed;
    });
  }

  void run(const ExecSpace& space) const {
    Kokkos::parallel_for("TernaryCounter::forward::int8_decode_rows",
                         Kokkos::TeamPolicy<ExecSpace>(space, count, Kokkos::AUTO), *this);
  }
};

/// dst(j, o) = t[o, first + j] for j < count, 0 for o past `out` (backward_input's B: W's
/// columns). A team takes a 64 x 64 tile: it reads 64 rows of codes, transposes through scratch,
/// and writes 64 rows of 64 bytes.
template <class ExecSpace>
struct DecodeWeightColumns {
  using Mem = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  static constexpr int pitch = decoded_tile + 4;  // scratch row pitch (fewer bank conflicts)
  Kokkos::View<const std::uint8_t**, Kokkos::LayoutRight, Mem> codes;
  int C = 8;
  Int8Matrix<Mem> dst;
  std::int64_t first = 0, count = 0;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    constexpr int groups = decoded_tile / 4;
    const std::int64_t out = codes.extent(0), in = codes.extent(1) / 3 * 4;
    const std::int64_t o_tiles = dst.extent(1) / decoded_tile;
    const std::int64_t o0 = team.league_rank() % o_tiles * decoded_tile;
    const std::int64_t j0 = team.league_rank() / o_tiles * decoded_tile;
    std::int8_t* tile = static_cast<std::int8_t*>(
        team.team_scratch(0).get_shmem(decoded_tile * pitch * sizeof(std::int8_t)));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, decoded_tile * groups), [&](int idx) {
      const int ol = idx / groups, g = idx % groups;
      const std::int64_t o = o0 + ol, i = first + j0 + 4 * g;
      const bool valid = o < out && i < in;
      const std::uint32_t word = valid ? load_group(&codes(o, 3 * (i / 4))) : 0u;
      for (int e = 0; e < 4; ++e) {
        tile[(4 * g + e) * pitch + ol] =
            std::int8_t(valid ? decode_ternary(group_code(word, e), C) : 0);
      }
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, decoded_tile * groups), [&](int idx) {
      const int jl = idx / groups, w = idx % groups;
      if (j0 + jl >= count) return;
      std::uint32_t packed = 0;
      for (int e = 0; e < 4; ++e) {
        packed |= std::uint32_t(std::uint8_t(tile[jl * pitch + 4 * w + e])) << (8 * e);
      }
      *reinterpret_cast<std::uint32_t*>(&dst(j0 + jl, o0 + 4 * w)) = packed;
    });
  }

  void run(const ExecSpace& space) const {
    const std::int64_t tiles =
        std::int64_t(dst.extent(1)) / decoded_tile * ((count + decoded_tile - 1) / decoded_tile);
    Kokkos::parallel_for("TernaryCounter::backward_input::int8_decode_columns",
                         Kokkos::TeamPolicy<ExecSpace>(space, tiles, Kokkos::AUTO)
                             .set_scratch_size(0, Kokkos::PerTeam(decoded_tile * pitch)),
                         *this);
  }
};

/// The epilogue of the int32 sum the GEMM left in sums(r, c)'s bits, stored at (r, first_col +
/// c), for r < rows, c < cols: each element is read and stored by one thread, so the epilogue may
/// store into `sums` itself. GPUs: a row per thread's 32 vector lanes (8 rows a team), 4
/// neighbouring columns a lane, read before any is stored (4 loads in flight); hosts: a row a
/// team of one thread.
template <class ExecSpace, class Epilogue>
void finish_in_place(
    const ExecSpace& space,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& sums,
    std::int64_t rows, std::int64_t cols, const Epilogue& epilogue, const char* label,
    std::int64_t first_col = 0) {
  using Rows = RowsByLanes<ExecSpace>;
  if (rows == 0 || cols == 0) return;
  Kokkos::parallel_for(
      label, Rows::policy(space, rows), KOKKOS_LAMBDA(const typename Rows::member_type& team) {
        Rows::for_each_row(team, rows, [&](std::int64_t r) {
          Kokkos::parallel_for(
              Kokkos::ThreadVectorRange(team, (cols + 3) / 4), [&](std::int64_t g) {
                const std::int64_t c = 4 * g, n = Kokkos::min(std::int64_t(4), cols - c);
                std::int32_t sum[4] = {0, 0, 0, 0};
                for (int e = 0; e < n; ++e) sum[e] = Kokkos::bit_cast<std::int32_t>(sums(r, c + e));
                for (int e = 0; e < n; ++e) epilogue.store(r, first_col + c + e, sum[e]);
              });
        });
      });
}

}  // namespace TernaryCounter::Impl
