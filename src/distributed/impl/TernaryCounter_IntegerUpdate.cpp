// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "distributed/impl/TernaryCounter_IntegerUpdate.hpp"

#include "TernaryCounter_Blocks.hpp"
#include "core/TernaryCounter_Reallocate.hpp"
#include "distributed/impl/TernaryCounter_AllGather.hpp"
#include "distributed/impl/TernaryCounter_Ring.hpp"

#include <Kokkos_Profiling_ScopedRegion.hpp>
#include "TernaryCounter_DataParallelPhases.hpp"
#include "core/TernaryCounter_Validation.hpp"
#include "engines/TernaryCounter_ExecutionSpaces.hpp"
#include "engines/TernaryCounter_Tiling.hpp"

#include <algorithm>
#include <string>

namespace TernaryCounter::Distributed::Impl {

namespace {

/// Runs `collective` on a host copy of `view` (the view itself where the host can read it), then
/// copies `back` (a subview of the host copy's span, as [first, last) elements) to the view.
template <class ExecSpace, class View, class Collective>
void on_host(const ExecSpace& space, const View& view, std::int64_t first, std::int64_t last,
             Collective collective) {
  space.fence("TernaryCounter::Distributed: before a host collective");
  using Memory = typename View::memory_space;
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Memory>::accessible) {
    collective(view.data());
  } else {
    // Device memory without a device collective: through the host (MPI may not be CUDA-aware).
    using Element = typename View::value_type;
    using Flat = Kokkos::View<Element*, Memory, Kokkos::MemoryUnmanaged>;
    const Flat device(view.data(), view.span());
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, device);
    collective(host.data());
    const std::pair<std::int64_t, std::int64_t> back(first, last);
    Kokkos::deep_copy(space, Kokkos::subview(device, back), Kokkos::subview(host, back));
  }
}

}  // namespace

template <class ExecSpace>
std::int64_t integer_round_rows(std::int64_t in, int size, std::int64_t budget_bytes) {
  const std::int64_t budget =
      budget_bytes > 0 ? budget_bytes : std::int64_t(Tiling<ExecSpace>::workspace_bytes);
  return std::max<std::int64_t>(
      1, budget / (std::int64_t(sizeof(std::int32_t)) * std::max<std::int64_t>(1, in) * size));
}

template <class ExecSpace>
std::int64_t integer_update(const Communicator& comm, const ExecSpace& space,
                            const PackedState<typename ExecSpace::memory_space>& state,
                            const InputView<typename ExecSpace::memory_space>& x_local,
                            const InputView<typename ExecSpace::memory_space>& grad_out_local,
                            const UpdateParams& params, const std::vector<std::int64_t>& samples,
                            UpdateWorkspace<typename ExecSpace::memory_space>& workspace) {
  using Mem = typename ExecSpace::memory_space;
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::Distributed::integer_update");
  const int n = comm.size(), rank = comm.rank();
  std::int64_t m = 0, offset = 0;
  for (int r = 0; r < n; ++r) {
    if (r < rank) offset += samples[r];
    m += samples[r];
  }
  // Every rank knows every count, so every rank throws the same error here.
  TernaryCounter::Impl::require_int8_bound("Distributed::update_from_io", "M (global samples)", m,
                                           TernaryCounter::int8_max_samples);
  const std::int64_t in = state.in(), out = state.out();
  std::vector<std::int64_t> rows(std::size_t(n) + 1);
  std::int64_t largest = 0;
  for (int r = 0; r <= n; ++r) {
    rows[r] = r < n ? block(out, r, n).first : out;
    if (r > 0) largest = std::max(largest, rows[r] - rows[r - 1]);
  }
  if (!workspace.integer) workspace.integer = std::make_shared<IntegerWorkspace<Mem>>();
  IntegerWorkspace<Mem>& buffers = *workspace.integer;

  // 1. The columns' absmax over the global batch: a max of local ones.
  const auto absmax = TernaryCounter::Impl::sized(buffers.absmax, "Distributed::absmax", in + out);
  TernaryCounter::Experimental::int8_column_absmax(space, x_local, grad_out_local, absmax);
  on_host(space, absmax, 0, in + out,
          [&](std::uint32_t* bits) { ring_all_reduce_max(comm, bits, in + out); });

  // 2. This rank's samples quantized once, on the global streams.
  TernaryCounter::Experimental::int8_quantize_operands(space, x_local, grad_out_local, absmax,
                                                       params.seed, params.row_offset, m, offset,
                                                       buffers.operands);

  // 3. Rounds: a slice of every rank's row block; the slices' sums over all ranks (exact in any
  // order) reach their owner, which updates those rows.
  const std::int64_t slice = std::min(std::max<std::int64_t>(largest, 1),
                                      integer_round_rows<ExecSpace>(in, n, params.workspace_bytes));
  const auto sums = TernaryCounter::Impl::sized(buffers.sums, "Distributed::sums", slice * n, in);
  const SkippedRowsView<Mem> skipped(
      Kokkos::view_alloc(space, "TernaryCounter::Distributed::skipped_rows"));
  std::int64_t skipped_here = 0;
  std::vector<std::int64_t> elements(std::size_t(n) + 1);
  for (std::int64_t done = 0; done < largest; done += slice) {
    std::vector<std::int64_t> first(static_cast<std::size_t>(n)),
        count(static_cast<std::size_t>(n));
    std::int64_t at = 0;
    for (int r = 0; r < n; ++r) {
      first[r] = rows[r] + done;
      count[r] = std::clamp<std::int64_t>(rows[r + 1] - first[r], 0, slice);
      const std::pair<std::int64_t, std::int64_t> part(at, at + count[r]);
      TernaryCounter::Experimental::int8_gradient_rows(space, buffers.operands, first[r],
                                                       Kokkos::subview(sums, part, Kokkos::ALL));
      elements[r] = at * in;
      at += count[r];
    }
    elements[n] = at * in;
    on_host(space, sums, elements[rank], elements[rank + 1],
            [&](std::int32_t* data) { ring_reduce_scatter_sum(comm, data, elements); });
    if (count[rank] > 0) {
      UpdateParams p = params;
      p.row_offset = params.row_offset + first[rank];
      const std::int64_t mine = elements[rank] / std::max<std::int64_t>(1, in);
      TernaryCounter::Experimental::int8_update_from_sums(
          space, state.row_range(first[rank], first[rank] + count[rank]),
          Kokkos::subview(sums, std::make_pair(mine, mine + count[rank]), Kokkos::ALL), absmax,
          first[rank], p, skipped);
      skipped_here += TernaryCounter::Impl::wait_for_report(space, skipped).skipped_rows;
    }
  }

  // 4. Every rank's rows to every rank.
  all_gather_rows(comm, space,
                  {{nullptr, state.codes.data(), std::int64_t(state.codes.extent(1)), rows},
                   {nullptr, state.scale.data(), std::int64_t(sizeof(float)), rows},
                   {nullptr, state.v.data(), std::int64_t(sizeof(float)), rows}});
  return skipped_here;
}

#define TERNARYCOUNTER_INSTANTIATE_INTEGER_UPDATE(SPACE)                            \
  template std::int64_t integer_round_rows<SPACE>(std::int64_t, int, std::int64_t); \
  template std::int64_t integer_update<SPACE>(                                      \
      const Communicator&, const SPACE&, const PackedState<SPACE::memory_space>&,   \
      const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&, \
      const UpdateParams&, const std::vector<std::int64_t>&,                        \
      UpdateWorkspace<SPACE::memory_space>&);

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_INTEGER_UPDATE)

}  // namespace TernaryCounter::Distributed::Impl
