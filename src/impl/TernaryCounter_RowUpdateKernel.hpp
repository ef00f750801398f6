// The row update of SPEC §3 steps 2-11 for rows whose gradient is in memory: one team per row.
// Used by update() on the caller's gradient and by update_from_io() on its gradient rows.
#pragma once

#include "TernaryCounter_Hash.hpp"
#include "TernaryCounter_RowMath.hpp"
#include "TernaryCounter_Tiling.hpp"

#include <Kokkos_Core.hpp>

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
  UpdateConstants k;        ///< k.row_offset is the global index of row 0 of these views
  int blocks_per_pass = 1;  ///< 256-column blocks whose lane partials are in scratch at once

  KOKKOS_INLINE_FUNCTION static std::size_t scratch_bytes(int blocks_per_pass) {
    return sizeof(LanePartial) * (std::size_t(blocks_per_pass) * RowMath::sum_lanes + 1);
  }

  KOKKOS_FUNCTION float ternary(std::int64_t row, std::int64_t i) const {
    const std::uint32_t word = load_group(&codes(row, bytes_per_group * (i / codes_per_group)));
    return float(decode_ternary(group_code(word, int(i % codes_per_group)), k.C));
  }

  KOKKOS_FUNCTION void operator()(const member_type& team, std::int64_t& skipped) const {
    const std::int64_t row = team.league_rank();
    const std::int64_t in = k.in;
    auto* partial =
        static_cast<LanePartial*>(team.team_shmem().get_shmem(scratch_bytes(blocks_per_pass)));
    LanePartial* total = partial + blocks_per_pass * RowMath::sum_lanes;

    // Step 2: lane partials in parallel, then the fixed fold and the ascending block sum.
    const auto grad_of = [&](std::int64_t i) { return grad(row, i); };
    const auto ternary_of = [&](std::int64_t i) { return ternary(row, i); };
    const std::int64_t blocks = RowMath::sum_block_count(in);
    Kokkos::single(Kokkos::PerTeam(team), [&]() { *total = LanePartial{}; });
    for (std::int64_t first = 0; first < blocks; first += blocks_per_pass) {
      const int count = int(Kokkos::min(std::int64_t(blocks_per_pass), blocks - first));
      team.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, count * RowMath::sum_lanes), [&](int q) {
        partial[q] = RowMath::lane_partial(grad_of, ternary_of, in, first + q / RowMath::sum_lanes,
                                           q % RowMath::sum_lanes);
      });
      team.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, count),
                           [&](int b) { RowMath::fold_lanes(partial + b * RowMath::sum_lanes); });
      team.team_barrier();
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        for (int b = 0; b < count; ++b) {
          RowMath::add_block(*total, partial[b * RowMath::sum_lanes], first + b == 0);
        }
      });
    }
    team.team_barrier();

    // Steps 3-8, once per row, broadcast to the team.
    RowMath::RowScalars rs;
    Kokkos::single(
        Kokkos::PerTeam(team),
        [&](RowMath::RowScalars& r) { r = RowMath::row_scalars(k, *total, v(row), scale(row)); },
        rs);
    if (rs.skip) {
      if (team.team_rank() == 0) skipped += 1;
      return;
    }

    // Steps 9-10: one packed group (4 weights, 3 bytes) per iteration.
    const std::int64_t global_row = k.row_offset + row;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, in / codes_per_group), [&](std::int64_t g) {
      std::uint8_t* bytes = &codes(row, bytes_per_group * g);
      const std::uint32_t word = load_group(bytes);
      int next[codes_per_group];
      for (int lane = 0; lane < codes_per_group; ++lane) {
        const std::int64_t i = codes_per_group * g + lane;
        const float u = uniform01(k.seed, element_index(global_row, in, i));
        next[lane] = RowMath::updated_code(k, rs, group_code(word, lane), grad(row, i), u);
      }
      store_group(make_group(next[0], next[1], next[2], next[3]), bytes);
    });

    // Step 11.
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      v(row) = rs.v_new;
      scale(row) = rs.s_new;
    });
  }

  /// The team size for a requested one (0 = the backend's default); throws
  /// std::invalid_argument if the backend cannot run it. Callers check before changing anything.
  static int resolve_team_size(const ExecSpace& space, int requested) {
    const int team_size = requested == 0 ? Tiling<ExecSpace>::update_team_size : requested;
    RowUpdateKernel probe{};
    probe.blocks_per_pass = Kokkos::max(1, team_size / RowMath::sum_lanes);
    const auto policy =
        policy_type(space, 1, Kokkos::AUTO)
            .set_scratch_size(0, Kokkos::PerTeam(scratch_bytes(probe.blocks_per_pass)));
    const int team_size_max = policy.team_size_max(probe, Kokkos::ParallelReduceTag());
    if (team_size > team_size_max) {
      throw std::invalid_argument("TernaryCounter: team_size = " + std::to_string(team_size) +
                                  " exceeds this backend's maximum of " +
                                  std::to_string(team_size_max));
    }
    return team_size;
  }

  /// Runs the update on all rows of the views with `team_size` threads per row (0 = the
  /// backend's default); returns the number of skipped rows.
  std::int64_t run(const ExecSpace& space, int requested_team_size) const {
    const std::int64_t rows = codes.extent(0);
    const int team_size = resolve_team_size(space, requested_team_size);
    if (rows == 0) return 0;
    RowUpdateKernel kernel = *this;
    kernel.blocks_per_pass = Kokkos::max(1, team_size / RowMath::sum_lanes);
    const auto policy =
        policy_type(space, rows, team_size)
            .set_scratch_size(0, Kokkos::PerTeam(scratch_bytes(kernel.blocks_per_pass)));
    std::int64_t skipped = 0;
    Kokkos::parallel_reduce("TernaryCounter::row_update", policy, kernel, skipped);
    return skipped;
  }
};

}  // namespace TernaryCounter::Impl
