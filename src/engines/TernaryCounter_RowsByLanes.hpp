// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Rows by vector lanes, the launch shape of the kernels that treat a matrix row by row: on GPUs
// each row gets one team thread's 32 vector lanes (a warp on CUDA), 8 rows a team, so a row's
// reductions stay within its lanes (no team barrier) and many rows are in flight; on hosts a row
// is a team of one thread and one lane.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace TernaryCounter::Impl {

template <class ExecSpace>
struct RowsByLanes {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  static constexpr bool host = std::is_same_v<typename ExecSpace::memory_space, Kokkos::HostSpace>;
  static constexpr int threads = host ? 1 : 8, lanes = host ? 1 : 32;

  /// The teams of `rows` rows.
  static Kokkos::TeamPolicy<ExecSpace> policy(const ExecSpace& space, std::int64_t rows) {
    return Kokkos::TeamPolicy<ExecSpace>(space, (rows + threads - 1) / threads, threads, lanes);
  }

  /// row(r) for each of this team's rows, r < rows, each by one team thread (its vector lanes
  /// are row's to use).
  template <class Row>
  KOKKOS_INLINE_FUNCTION static void for_each_row(const member_type& team, std::int64_t rows,
                                                  const Row& row) {
    const std::int64_t first = std::int64_t(team.league_rank()) * team.team_size();
    const std::int64_t count = Kokkos::min(std::int64_t(team.team_size()), rows - first);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, count),
                         [&](std::int64_t i) { row(first + i); });
  }
};

}  // namespace TernaryCounter::Impl
