// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The row update of SPEC §3 steps 2-11 for rows whose gradient is in memory: one team per row.
// Used by update() on the caller's gradient and by update_from_io() on its gradient rows; the
// integer path's GPU update and the FP32 GPU update of a few samples read their gradient from a
// Source instead, which forms each group of it on the way in (IntegerGradientRows.hpp,
// FloatGradientRows.hpp).
//
// Work unit: the 8 packed groups b*64 + s + 8r (r = 0..7) of canonical block b, which hold the
// complete chains of lanes 4s..4s+3 (see RowMath::accumulate_group). A unit reads its gradient
// by groups (as 16-byte vectors where the rows allow; the row sums load 4 groups at a
// time), and the units of a warp read contiguous memory.
// GPU threads read the old codes' ternaries and counters and step 10 from a table in shared memory
// (CodeUpdateTable). Host threads that own a whole row (the hosts' default) walk it a canonical
// block at a time instead, in loops over contiguous columns that compilers vectorize
// (host_row_update, HostRowUpdate.hpp).
#pragma once

#include "TernaryCounter_Hash.hpp"
#include "core/TernaryCounter_CodeUpdateTable.hpp"
#include "core/TernaryCounter_RowMath.hpp"
#include "engines/TernaryCounter_Float4.hpp"
#include "engines/TernaryCounter_HostIsa.hpp"
#include "engines/TernaryCounter_Tiling.hpp"
#include "engines/TernaryCounter_Unroll.hpp"
#include "update/impl/TernaryCounter_HostRowUpdate.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace TernaryCounter::Impl {

/// The gradient as float rows in memory (`grad`): RowUpdateKernel's default source.
struct StoredGradient {
  static constexpr int batch = 0;  ///< unused: the stored rows load row_sum_batch groups at once
};

/// VectorRows: the gradient's rows are read as 16-byte vectors (vector_rows says when they can
/// be; enqueue launches that kernel on GPUs then).
/// Source: where a group of the gradient comes from: StoredGradient (grad), or a type with
/// `row(r) const`, which returns row r's source, whose `Float4 group(column) const` forms a group
/// of it (a unit binds its row once, so what is per row is loaded once), and
/// `static constexpr int batch` (groups whose loads the row sums issue together); such sources
/// run the team body on every backend (no host_row_update).
template <class ExecSpace, bool VectorRows = false, class Source = StoredGradient>
struct RowUpdateKernel {
  using memory_space = typename ExecSpace::memory_space;
  /// GPUs: teams of up to 128 threads with registers capped so that 8 of them share a
  /// multiprocessor (64 registers): more teams in flight hide more memory latency, while a
  /// tighter cap (12 teams, 40 registers) spills.
  static constexpr int capped_team_size = 128;
  using policy_type =
      std::conditional_t<Tiling<ExecSpace>::register_accumulators,
                         Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<capped_team_size, 8>>,
                         Kokkos::TeamPolicy<ExecSpace>>;
  /// Larger teams (up to 1024 threads on CUDA): the compiler is told to fit 1024 threads.
  using wide_policy_type = Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<1024, 1>>;
  using member_type = typename policy_type::member_type;
  using LanePartial = RowMath::LanePartial;
  static constexpr int unit_groups = RowMath::group_strides_per_block;
#if defined(KOKKOS_ENABLE_CUDA)
  static constexpr bool cuda_backend = std::is_same_v<ExecSpace, Kokkos::Cuda>;
#else
  static constexpr bool cuda_backend = false;
#endif

  Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, memory_space> codes;
  Kokkos::View<float*, memory_space> scale;
  Kokkos::View<float*, memory_space> v;
  Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> grad;
  UpdateConstants k;  ///< k.row_offset is the global index of row 0 of these views
  /// Rows skipped, added to atomically (rare) instead of a reduction the host would wait for.
  Kokkos::View<std::int64_t, memory_space> skipped;
  Source source{};  ///< the gradient's groups where they are not in grad
  int scratch_level = 0;
  static constexpr bool stored = std::is_same_v<Source, StoredGradient>;

  /// A unit's gradient and code words, loaded whole for the hosts' flat code update
  /// (update_unit_flat). GPU threads read a unit by groups instead (for_each_group), in the row
  /// sums and again in the code update: a whole unit lived in local memory there (a 368-byte stack
  /// frame, more local memory per multiprocessor than its L1); reading it twice from memory is
  /// faster.
  struct Unit {
    Float4 g[unit_groups];
    std::uint32_t word[unit_groups];
    int count = 0;  ///< groups of the unit inside the row (the last block may be partial)
  };

  KOKKOS_INLINE_FUNCTION std::int64_t blocks() const {
    return RowMath::sum_block_count(k.in);
  }
  KOKKOS_INLINE_FUNCTION std::int64_t units() const {
    return blocks() * RowMath::group_strides_per_block;
  }
  /// Whether teams of this size run host_row_update: one host thread per row.
  KOKKOS_INLINE_FUNCTION static constexpr bool host_rows(int team_size) {
    return stored && Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible &&
           team_size == 1;
  }
  /// Team scratch: for host_row_update, the row's ternaries (floats) and codes (bytes); else the
  /// code update table (but on CUDA, see team_table), then per block of a row its total
  /// (folds_in_warps), else its 32 lane partials.
  static constexpr std::size_t table_bytes =
      cuda_backend ? 0 : (sizeof(CodeUpdateTable) + 15) / 16 * 16;
  KOKKOS_INLINE_FUNCTION static std::size_t scratch_bytes(std::int64_t in, int team_size) {
    if (host_rows(team_size)) return (sizeof(float) + 1) * std::size_t(in);
    const std::size_t per_block = folds_in_warps(team_size) ? 1 : RowMath::sum_lanes;
    return table_bytes +
           sizeof(LanePartial) * std::size_t(RowMath::sum_block_count(in)) * per_block;
  }
  /// The team's code update table. CUDA teams keep it in a static __shared__ variable, which the
  /// compiler knows to be shared memory: a lookup is one shared load with a 32-bit address,
  /// where a scratch pointer (generic) costs 64-bit address arithmetic and a generic load.
  KOKKOS_INLINE_FUNCTION static CodeUpdateTable& team_table(char* scratch) {
#if defined(__CUDA_ARCH__)
    if constexpr (cuda_backend) {
      __shared__ CodeUpdateTable table;
      return table;
    }
#endif
    return *reinterpret_cast<CodeUpdateTable*>(scratch);
  }

  /// Group r of unit u: b*64 + s + 8r, the groups holding the chains of lanes 4s..4s+3 of
  /// block b in ascending chain order.
  KOKKOS_INLINE_FUNCTION static std::int64_t unit_group(std::int64_t u, int r) {
    return (u / unit_groups) * RowMath::groups_per_block + u % unit_groups +
           std::int64_t(r) * unit_groups;
  }

  /// Groups of unit u inside the row (the last block may be partial).
  KOKKOS_INLINE_FUNCTION int group_count(std::int64_t u) const {
    const std::int64_t groups = k.in / codes_per_group, first = unit_group(u, 0);
    return first >= groups ? 0
                           : int(Kokkos::min<std::int64_t>(
                                 unit_groups, (groups - first + unit_groups - 1) / unit_groups));
  }
  /// `row`'s gradient source: the Source's row, or (StoredGradient) nothing.
  KOKKOS_INLINE_FUNCTION auto row_source(std::int64_t row) const {
    if constexpr (stored) {
      return StoredGradient{};
    } else {
      return source.row(row);
    }
  }
  /// Group r of unit u of `row`: its gradient (from src, row_source(row)) and code word.
  template <class RowSource>
  KOKKOS_INLINE_FUNCTION void read_group(const RowSource& src, std::int64_t row, std::int64_t u,
                                         int r, Float4& g, std::uint32_t& word) const {
    const std::int64_t group = unit_group(u, r);
    if constexpr (!stored) {
      g = src.group(codes_per_group * group);
    } else if constexpr (VectorRows) {
      g = *reinterpret_cast<const Float4*>(&grad(row, codes_per_group * group));
    } else {
      const float* p = &grad(row, codes_per_group * group);
      g = Float4{{p[0], p[1], p[2], p[3]}};
    }
    word = load_group(&codes(row, bytes_per_group * group));
  }
  KOKKOS_INLINE_FUNCTION void load_unit(std::int64_t row, std::int64_t u, Unit& d) const {
    const auto src = row_source(row);
    d.count = group_count(u);
    for (int r = 0; r < unit_groups; ++r) {
      if (r >= d.count) {  // past the row: zeros, which update_unit_flat computes, never stores
        d.g[r] = Float4{};
        d.word[r] = 0;
      } else {
        read_group(src, row, u, r, d.g[r], d.word[r]);
      }
    }
  }

  /// f(r, g, word) for each group r of unit u of `row` in order, with its gradient and code word
  /// read from memory. The loops have constant trip counts, so that nothing of them is indexed at
  /// run time. A whole unit is read Batch groups at a time, each batch's loads issued before f
  /// uses them, so that their latencies overlap: a group at a time, behind the loop's break (and
  /// the stores of the code update, which may alias), each thread waited one memory latency per
  /// group.
  template <int Batch, class F>
  KOKKOS_INLINE_FUNCTION void for_each_group(std::int64_t row, std::int64_t u, const F& f) const {
    static_assert(unit_groups % Batch == 0);
    const auto src = row_source(row);
    const int count = group_count(u);
    if (Batch > 1 && count == unit_groups) {
      TERNARYCOUNTER_UNROLL
      for (int first = 0; first < unit_groups; first += Batch) {
        Float4 g[Batch];
        std::uint32_t word[Batch];
        TERNARYCOUNTER_UNROLL
        for (int r = 0; r < Batch; ++r) read_group(src, row, u, first + r, g[r], word[r]);
        TERNARYCOUNTER_UNROLL
        for (int r = 0; r < Batch; ++r) f(first + r, g[r], word[r]);
      }
      return;
    }
    TERNARYCOUNTER_UNROLL
    for (int r = 0; r < unit_groups; ++r) {  // the last block of a row may be partial
      if (r >= count) break;
      Float4 g;
      std::uint32_t word;
      read_group(src, row, u, r, g, word);
      f(r, g, word);
    }
  }
  /// Groups whose loads the row sums issue together: 4 overlap enough latency, 8 gain nothing
  /// more. The code update loads a group at a time: batching its loads slows long rows down.
  static constexpr int row_sum_batch = stored ? 4 : Source::batch;

  /// Step 2 for unit u of `row`: its 4 lane chains, the ternaries read from the table.
  KOKKOS_INLINE_FUNCTION void lane_chains(const CodeUpdateTable& table, std::int64_t row,
                                          std::int64_t u, LanePartial (&p)[codes_per_group]) const {
    for_each_group<row_sum_batch>(row, u, [&](int, const Float4& g, std::uint32_t word) {
      float t[codes_per_group];
      for (int pos = 0; pos < codes_per_group; ++pos) {
        t[pos] = table.ternary[group_code(word, pos)];
      }
      RowMath::accumulate_group(p, g.v, t);
    });
  }

  /// Whole warps take whole blocks when the team is whole warps (a team is one CUDA block, its
  /// rank the lane's position): then the block folds travel by warp shuffles.
  KOKKOS_INLINE_FUNCTION static bool folds_in_warps(int team_size) {
    if constexpr (cuda_backend) {
      return team_size % 32 == 0;
    } else {
      return false;
    }
  }

  /// RowMath::fold_lanes of a block whose 32 lanes 8 consecutive threads of a warp hold, 4 each
  /// (thread s: lanes 4s..4s+3). The same additions in the same order: s = 16, 8 and 4 add the
  /// lanes of the thread 4, 2 and 1 places up, s = 2 and 1 stay inside thread 0, whose p[0]
  /// ends as the block's total. Every lane of the warp must call it.
  KOKKOS_INLINE_FUNCTION static void fold_across_threads(LanePartial (&p)[codes_per_group]) {
#if defined(KOKKOS_ENABLE_CUDA)
    KOKKOS_IF_ON_DEVICE((for (int t = unit_groups / 2; t >= 1; t /= 2) {
      for (int pos = 0; pos < codes_per_group; ++pos) {
        const float gg = Kokkos::shfl_down(p[pos].gg, t, unit_groups);
        const float gt = Kokkos::shfl_down(p[pos].gt, t, unit_groups);
        p[pos].gg = p[pos].gg + gg;
        p[pos].gt = p[pos].gt + gt;
      }
    }))
#endif
    for (int s = codes_per_group / 2; s >= 1; s /= 2) {
      for (int j = 0; j < s; ++j) {
        p[j].gg = p[j].gg + p[j + s].gg;
        p[j].gt = p[j].gt + p[j + s].gt;
      }
    }
  }

  /// Steps 2-8 with every block folded in registers (folds_in_warps): the block totals, then
  /// team_row_scalars.
  KOKKOS_INLINE_FUNCTION RowMath::RowScalars row_scalars_warp_fold(const member_type& team,
                                                                   const CodeUpdateTable& table,
                                                                   std::int64_t row,
                                                                   LanePartial* block_total) const {
    const std::int64_t n = units();
    const int rank = team.team_rank(), size = team.team_size();
    // Team-uniform rounds, so that every lane of a warp takes part in the shuffles.
    for (std::int64_t base = 0; base < n; base += size) {
      const std::int64_t u = base + rank;
      LanePartial p[codes_per_group] = {};
      if (u < n) lane_chains(table, row, u, p);
      fold_across_threads(p);
      if (u < n && u % unit_groups == 0) block_total[u / unit_groups] = p[0];
    }
    team.team_barrier();
    return team_row_scalars(team, row, block_total, 1);
  }

  /// Steps 2-8 through the lane partials in scratch: fold_lanes per block, then
  /// team_row_scalars.
  KOKKOS_INLINE_FUNCTION RowMath::RowScalars row_scalars_scratch_fold(const member_type& team,
                                                                      const CodeUpdateTable& table,
                                                                      std::int64_t row,
                                                                      LanePartial* partial) const {
    const std::int64_t n = units();
    const int rank = team.team_rank(), size = team.team_size();
    for (std::int64_t u = rank; u < n; u += size) {
      LanePartial p[codes_per_group] = {};
      lane_chains(table, row, u, p);
      const std::int64_t lane0 = (u / unit_groups) * RowMath::sum_lanes + 4 * (u % unit_groups);
      for (int pos = 0; pos < codes_per_group; ++pos) partial[lane0 + pos] = p[pos];
    }
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, blocks()), [&](std::int64_t b) {
      RowMath::fold_lanes(partial + b * RowMath::sum_lanes);
    });
    team.team_barrier();
    return team_row_scalars(team, row, partial, RowMath::sum_lanes);
  }

  /// Steps 3-8 after the block totals (block b's at totals[b * stride]): one thread adds them in
  /// ascending order and forms the row scalars, which the team then reads; both folds end here.
  /// (Every thread doing it would repeat the work in each thread's instructions.)
  KOKKOS_INLINE_FUNCTION RowMath::RowScalars team_row_scalars(const member_type& team,
                                                              std::int64_t row,
                                                              const LanePartial* totals,
                                                              std::int64_t stride) const {
    RowMath::RowScalars rs;
    Kokkos::single(
        Kokkos::PerTeam(team),
        [&](RowMath::RowScalars& r) {
          LanePartial sums{};
          for (std::int64_t b = 0; b < blocks(); ++b) {
            RowMath::add_block(sums, totals[b * stride], b == 0);
          }
          r = RowMath::row_scalars(k, sums, v(row), scale(row));
        },
        rs);
    return rs;
  }

  /// Steps 9-10 for weight pos of group r of unit u, whose code word is `word`: step 10 and
  /// the decoding by the table. Element indices are taken mod 2^32, so the row's base is reduced
  /// once per unit.
  KOKKOS_INLINE_FUNCTION int new_code(const CodeUpdateTable& table, std::uint32_t row_base,
                                      std::int64_t u, std::uint32_t word, const Float4& g,
                                      const RowMath::RowScalars& rs, int r, int pos) const {
    const std::uint32_t i = std::uint32_t(codes_per_group * unit_group(u, r) + pos);
    const CodeUpdateTable::OldCode old = table.old_code[group_code(word, pos)];
    return table.next(
        old, RowMath::counter_sum(k, rs, old.counter, g.v[pos], uniform01(k.seed, row_base + i)));
  }

  /// Steps 9-10 for one unit. Hosts load it whole and compute all its codes in one flat loop,
  /// which compilers vectorize (8 hashes per AVX2 instruction), then pack them. GPUs go a group
  /// at a time: the flat loop keeps 32 codes live (128 registers instead of 72), which costs
  /// occupancy.
  KOKKOS_INLINE_FUNCTION void update_unit(std::int64_t row, std::int64_t u,
                                          const RowMath::RowScalars& rs,
                                          [[maybe_unused]] const CodeUpdateTable& table) const {
    KOKKOS_IF_ON_HOST((Unit d; load_unit(row, u, d); update_unit_flat(row, u, d, rs);))
    KOKKOS_IF_ON_DEVICE((update_unit_by_group(row, u, rs, table);))
  }
  /// Groups past the row (a short last block) are computed from zeros and not stored. The loop
  /// reads flat copies only: GCC vectorizes no loop that indexes the unit's 2-d arrays or reads
  /// members.
  KOKKOS_INLINE_FUNCTION void update_unit_flat(std::int64_t row, std::int64_t u, const Unit& d,
                                               const RowMath::RowScalars& rs) const {
    constexpr int n = unit_groups * codes_per_group;
    const std::uint32_t first = std::uint32_t(element_index(k.row_offset + row, k.in, 0) +
                                              codes_per_group * unit_group(u, 0));
    const UpdateConstants kc = k;
    const RowMath::RowScalars rc = rs;
    float g[n];
    for (int e = 0; e < n; ++e) g[e] = d.g[e / codes_per_group].v[e % codes_per_group];
    int next[n];
    for (int e = 0; e < n; ++e) {
      const int r = e / codes_per_group, pos = e % codes_per_group;
      // Group r of the unit starts unit_groups groups after group r - 1.
      const std::uint32_t i = first + std::uint32_t(codes_per_group * unit_groups * r + pos);
      next[e] =
          RowMath::updated_code(kc, rc, group_code(d.word[r], pos), g[e], uniform01(kc.seed, i));
    }
    for (int r = 0; r < d.count; ++r) {
      const int* c = next + codes_per_group * r;
      store_codes(row, u, r, {c[0], c[1], c[2], c[3]});
    }
  }
  /// The unit read again from memory, a group at a time (see Unit).
  KOKKOS_INLINE_FUNCTION void update_unit_by_group(std::int64_t row, std::int64_t u,
                                                   const RowMath::RowScalars& rs,
                                                   const CodeUpdateTable& table) const {
    const std::uint32_t row_base = element_index(k.row_offset + row, k.in, 0);
    for_each_group<1>(row, u, [&](int r, const Float4& g, std::uint32_t word) {
      int next[codes_per_group];
      for (int pos = 0; pos < codes_per_group; ++pos) {
        next[pos] = new_code(table, row_base, u, word, g, rs, r, pos);
      }
      store_codes(row, u, r, next);
    });
  }
  KOKKOS_INLINE_FUNCTION void store_codes(std::int64_t row, std::int64_t u, int r,
                                          const int (&c)[codes_per_group]) const {
    store_group(make_group(c[0], c[1], c[2], c[3]),
                &codes(row, bytes_per_group * unit_group(u, r)));
  }

  KOKKOS_FUNCTION void operator()(const member_type& team) const {
    run_team_body(*this, team);
  }
  KOKKOS_INLINE_FUNCTION void team_body(const member_type& team) const {
    const std::int64_t row = team.league_rank();
    const int rank = team.team_rank(), size = team.team_size();
    auto* scratch =
        static_cast<char*>(team.team_scratch(scratch_level).get_shmem(scratch_bytes(k.in, size)));
    if constexpr (host_rows(1)) {
      if (size == 1) {
        host_row_update(*this, row, reinterpret_cast<float*>(scratch));
        return;
      }
    }
    const std::int64_t n = units();
    CodeUpdateTable& table = team_table(scratch);
    auto* partial = reinterpret_cast<LanePartial*>(scratch + table_bytes);
    table.fill(k.C, rank, size);
    team.team_barrier();

    // Steps 2-8: every lane chain of the row, then per block the fixed fold, then the blocks in
    // ascending order, then the row scalars.
    const RowMath::RowScalars rs = folds_in_warps(size)
                                       ? row_scalars_warp_fold(team, table, row, partial)
                                       : row_scalars_scratch_fold(team, table, row, partial);
    if (rs.skip) {
      if (rank == 0) Kokkos::atomic_add(&skipped(), std::int64_t(1));
      return;
    }

    // Steps 9-10: every unit read again.
    for (std::int64_t u = rank; u < n; u += size) update_unit(row, u, rs, table);

    // Step 11.
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      v(row) = rs.v_new;
      scale(row) = rs.s_new;
    });
  }

  /// Whether every group of the gradient's rows can be read as one 16-byte vector: an aligned
  /// start and a row stride of whole vectors (the unit tests pin this condition).
  static bool vector_rows(const Kokkos::View<const float**, Kokkos::LayoutRight, memory_space>& g) {
    return reinterpret_cast<std::uintptr_t>(g.data()) % 16 == 0 && g.stride(0) % 4 == 0;
  }

  static int team_size_max(const ExecSpace& space, bool wide) {
    const RowUpdateKernel kernel{};
    return wide ? wide_policy_type(space, 1, Kokkos::AUTO)
                      .team_size_max(kernel, Kokkos::ParallelForTag())
                : policy_type(space, 1, Kokkos::AUTO)
                      .team_size_max(kernel, Kokkos::ParallelForTag());
  }

  /// Threads per row for a requested count (0 = the backend's choice for rows of width `in`);
  /// throws std::invalid_argument if the backend cannot run it. Callers check before changing
  /// anything.
  static int resolve_team_size(const ExecSpace& space, int requested, std::int64_t in) {
    const int largest = Kokkos::max(team_size_max(space, false), team_size_max(space, true));
    if (requested == 0) {
      // One unit per thread (whole warps), at most update_team_size threads.
      const std::int64_t units = RowMath::sum_block_count(in) * RowMath::group_strides_per_block;
      const std::int64_t one_each = Kokkos::max<std::int64_t>(32, (units + 31) / 32 * 32);
      const std::int64_t chosen =
          Kokkos::min<std::int64_t>(one_each, Tiling<ExecSpace>::update_team_size);
      return int(Kokkos::min<std::int64_t>(chosen, largest));
    }
    if (requested > largest) {
      throw std::invalid_argument("TernaryCounter: team_size = " + std::to_string(requested) +
                                  " exceeds this backend's maximum of " + std::to_string(largest));
    }
    return requested;
  }

  /// Enqueues the update of all rows of the views on `space` with `requested_team_size` threads
  /// per row (0 = the backend's default); skipped rows are added to `skipped`. Does not wait.
  void enqueue(const ExecSpace& space, int requested_team_size) const {
    if constexpr (stored && !VectorRows && !host_rows(1)) {
      // GPUs: a kernel for rows of whole vectors. One kernel with both loads would issue the
      // scalar ones predicated off beside each vector load.
      if (vector_rows(grad)) {
        RowUpdateKernel<ExecSpace, true>{codes, scale, v, grad, k, skipped}.enqueue(
            space, requested_team_size);
        return;
      }
    }
    const std::int64_t rows = codes.extent(0);
    const int team_size = resolve_team_size(space, requested_team_size, k.in);
    if (rows == 0) return;
    RowUpdateKernel kernel = *this;
    const std::size_t bytes = scratch_bytes(k.in, team_size);
    const auto launch = [&](auto policy) {
      kernel.scratch_level = bytes <= std::size_t(policy.scratch_size_max(0)) ? 0 : 1;
      policy.set_scratch_size(kernel.scratch_level, Kokkos::PerTeam(bytes));
      Kokkos::parallel_for("TernaryCounter::row_update", policy, kernel);
    };
    // The register cap of policy_type leaves a GPU team little shared memory: enough for the
    // block totals of a warp fold (1 KiB at in = 32768), not for 32 lane partials per block.
    const bool capped = team_size <= team_size_max(space, false) &&
                        (folds_in_warps(team_size) || !Tiling<ExecSpace>::register_accumulators);
    if (capped) {
      launch(policy_type(space, rows, team_size));
    } else {
      launch(wide_policy_type(space, rows, team_size));
    }
  }
};

}  // namespace TernaryCounter::Impl
