// The row update of SPEC §3 steps 2-11 for rows whose gradient is in memory: one team per row.
// Used by update() on the caller's gradient and by update_from_io() on its gradient rows.
//
// Work unit: the 8 packed groups b*64 + s + 8r (r = 0..7) of canonical block b, which hold the
// complete chains of lanes 4s..4s+3 (see RowMath::accumulate_group). A unit reads its gradient
// as 16-byte vectors and each 3-byte group once, and the units of a warp read contiguous memory.
#pragma once

#include "TernaryCounter_Hash.hpp"
#include "TernaryCounter_RowMath.hpp"
#include "TernaryCounter_Tiling.hpp"
#include "impl/TernaryCounter_Float4.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace TernaryCounter::Impl {

template <class ExecSpace>
struct RowUpdateKernel {
  using memory_space = typename ExecSpace::memory_space;
  using policy_type = Kokkos::TeamPolicy<ExecSpace>;
  using member_type = typename policy_type::member_type;
  using LanePartial = RowMath::LanePartial;

  Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, memory_space> codes;
  Kokkos::View<float*, memory_space> scale;
  Kokkos::View<float*, memory_space> v;
  Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> grad;
  UpdateConstants k;          ///< k.row_offset is the global index of row 0 of these views
  bool vector_loads = false;  ///< the gradient's rows are 16-byte aligned
  int scratch_level = 0;

  KOKKOS_INLINE_FUNCTION std::int64_t blocks() const { return RowMath::sum_block_count(k.in); }
  KOKKOS_INLINE_FUNCTION std::int64_t units() const {
    return blocks() * RowMath::group_strides_per_block;
  }
  /// Lane partials of every block of a row.
  KOKKOS_INLINE_FUNCTION static std::size_t scratch_bytes(std::int64_t in) {
    return sizeof(LanePartial) * std::size_t(RowMath::sum_block_count(in) * RowMath::sum_lanes);
  }

  KOKKOS_INLINE_FUNCTION void load_gradient(std::int64_t row, std::int64_t group,
                                            float (&g)[4]) const {
    const float* p = &grad(row, codes_per_group * group);
    if (vector_loads) {
      const Float4 q = *reinterpret_cast<const Float4*>(p);
      for (int j = 0; j < 4; ++j) g[j] = q.v[j];
    } else {
      for (int j = 0; j < 4; ++j) g[j] = p[j];
    }
  }

  /// Calls f(group) for the groups of unit u in ascending chain order.
  template <class F>
  KOKKOS_INLINE_FUNCTION void for_unit_groups(std::int64_t u, const F& f) const {
    const std::int64_t groups = k.in / codes_per_group;
    const std::int64_t b = u / RowMath::group_strides_per_block;
    const std::int64_t s = u % RowMath::group_strides_per_block;
    for (int r = 0; r < RowMath::group_strides_per_block; ++r) {
      const std::int64_t group =
          b * RowMath::groups_per_block + s + std::int64_t(r) * RowMath::group_strides_per_block;
      if (group >= groups) break;
      f(group);
    }
  }

  KOKKOS_FUNCTION void operator()(const member_type& team, std::int64_t& skipped) const {
    const std::int64_t row = team.league_rank();
    auto* partial =
        static_cast<LanePartial*>(team.team_scratch(scratch_level).get_shmem(scratch_bytes(k.in)));

    // Step 2: every lane chain of the row, then per block the fixed fold, then the blocks in
    // ascending order.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, units()), [&](std::int64_t u) {
      LanePartial p[4] = {};
      for_unit_groups(u, [&](std::int64_t group) {
        float g[4];
        load_gradient(row, group, g);
        RowMath::accumulate_group(p, g, load_group(&codes(row, bytes_per_group * group)), k.C);
      });
      const std::int64_t lane0 = (u / RowMath::group_strides_per_block) * RowMath::sum_lanes +
                                 4 * (u % RowMath::group_strides_per_block);
      for (int pos = 0; pos < 4; ++pos) partial[lane0 + pos] = p[pos];
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, blocks()), [&](std::int64_t b) {
      RowMath::fold_lanes(partial + b * RowMath::sum_lanes);
    });
    team.team_barrier();

    // Steps 3-8, once per row, broadcast to the team.
    RowMath::RowScalars rs;
    Kokkos::single(
        Kokkos::PerTeam(team),
        [&](RowMath::RowScalars& r) {
          LanePartial sums{};
          for (std::int64_t b = 0; b < blocks(); ++b) {
            RowMath::add_block(sums, partial[b * RowMath::sum_lanes], b == 0);
          }
          r = RowMath::row_scalars(k, sums, v(row), scale(row));
        },
        rs);
    if (rs.skip) {
      if (team.team_rank() == 0) skipped += 1;
      return;
    }

    // Steps 9-10, a group (4 weights, 3 bytes) at a time.
    // Element indices are taken mod 2^32, so the row's base can be reduced once.
    const std::uint32_t row_base = element_index(k.row_offset + row, k.in, 0);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, units()), [&](std::int64_t u) {
      for_unit_groups(u, [&](std::int64_t group) {
        std::uint8_t* bytes = &codes(row, bytes_per_group * group);
        const std::uint32_t word = load_group(bytes);
        float g[4];
        load_gradient(row, group, g);
        int next[codes_per_group];
        for (int pos = 0; pos < codes_per_group; ++pos) {
          const std::int64_t i = codes_per_group * group + pos;
          const float u01 = uniform01(k.seed, row_base + std::uint32_t(i));
          next[pos] = RowMath::updated_code(k, rs, group_code(word, pos), g[pos], u01);
        }
        store_group(make_group(next[0], next[1], next[2], next[3]), bytes);
      });
    });

    // Step 11.
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      v(row) = rs.v_new;
      scale(row) = rs.s_new;
    });
  }

  /// Threads per row for a requested count (0 = the backend's choice for rows of width `in`);
  /// throws std::invalid_argument if the backend cannot run it. Callers check before changing
  /// anything.
  static int resolve_team_size(const ExecSpace& space, int requested, std::int64_t in) {
    int team_size = requested;
    if (team_size == 0) {
      // One unit per thread up to the backend's preferred size, whole warps on GPUs.
      const std::int64_t units = RowMath::sum_block_count(in) * RowMath::group_strides_per_block;
      team_size =
          int(Kokkos::min<std::int64_t>(Tiling<ExecSpace>::update_team_size,
                                        Kokkos::max<std::int64_t>(1, (units + 31) / 32 * 32)));
    }
    const auto policy = policy_type(space, 1, Kokkos::AUTO);
    const int team_size_max = policy.team_size_max(RowUpdateKernel{}, Kokkos::ParallelReduceTag());
    if (team_size > team_size_max) {
      throw std::invalid_argument("TernaryCounter: team_size = " + std::to_string(team_size) +
                                  " exceeds this backend's maximum of " +
                                  std::to_string(team_size_max));
    }
    return team_size;
  }

  /// Runs the update on all rows of the views with `requested_team_size` threads per row
  /// (0 = the backend's default); returns the number of skipped rows.
  std::int64_t run(const ExecSpace& space, int requested_team_size) const {
    const std::int64_t rows = codes.extent(0);
    const int team_size = resolve_team_size(space, requested_team_size, k.in);
    if (rows == 0) return 0;
    RowUpdateKernel kernel = *this;
    kernel.vector_loads =
        reinterpret_cast<std::uintptr_t>(grad.data()) % 16 == 0 && grad.stride(0) % 4 == 0;
    const std::size_t bytes = scratch_bytes(k.in);
    auto policy = policy_type(space, rows, team_size);
    kernel.scratch_level = bytes <= std::size_t(policy.scratch_size_max(0)) ? 0 : 1;
    policy.set_scratch_size(kernel.scratch_level, Kokkos::PerTeam(bytes));
    std::int64_t skipped = 0;
    Kokkos::parallel_reduce("TernaryCounter::row_update", policy, kernel, skipped);
    return skipped;
  }
};

}  // namespace TernaryCounter::Impl
