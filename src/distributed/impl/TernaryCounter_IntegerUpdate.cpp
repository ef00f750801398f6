// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "distributed/impl/TernaryCounter_IntegerUpdate.hpp"

#include "TernaryCounter_Blocks.hpp"
#include "distributed/impl/TernaryCounter_AllGather.hpp"
#include "distributed/impl/TernaryCounter_Ring.hpp"

#include <Kokkos_Profiling_ScopedRegion.hpp>
#include "core/impl/TernaryCounter_ExecutionSpaces.hpp"
#include "core/impl/TernaryCounter_Validation.hpp"
#include "update/impl/TernaryCounter_Int8UpdatePhases.hpp"

#include <string>

namespace TernaryCounter::Distributed::Impl {

namespace {

/// `view`, reallocated (contents dropped) when its extents differ.
template <class View, class... Extents>
View sized(View& view, const char* label, Extents... extents) {
  const std::int64_t want[] = {std::int64_t(extents)...};
  bool same = true;
  for (std::size_t d = 0; d < sizeof...(Extents); ++d) {
    same = same && std::int64_t(view.extent(d)) == want[d];
  }
  if (!same) {
    view = View(Kokkos::view_alloc(std::string("TernaryCounter::Distributed::") + label,
                                   Kokkos::WithoutInitializing),
                extents...);
  }
  return view;
}

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
std::int64_t integer_update(const Communicator& comm, const ExecSpace& space,
                            const PackedState<typename ExecSpace::memory_space>& state,
                            const InputView<typename ExecSpace::memory_space>& x_local,
                            const InputView<typename ExecSpace::memory_space>& grad_out_local,
                            const UpdateParams& params, const std::vector<std::int64_t>& samples,
                            UpdateWorkspace<typename ExecSpace::memory_space>& workspace) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::Distributed::integer_update");
  const int n = comm.size(), rank = comm.rank();
  std::int64_t m = 0, offset = 0;
  for (int r = 0; r < n; ++r) {
    if (r < rank) offset += samples[r];
    m += samples[r];
  }
  // Every rank knows every count, so every rank throws the same error here.
  TernaryCounter::Impl::require_int8_bound("Distributed::update_from_io", "M (global samples)", m,
                                           TernaryCounter::Impl::int8_max_samples);
  const std::int64_t in = state.in(), out = state.out();
  std::vector<std::int64_t> rows(std::size_t(n) + 1), elements(std::size_t(n) + 1);
  for (int r = 0; r <= n; ++r) {
    rows[r] = r < n ? block(out, r, n).first : out;
    elements[r] = rows[r] * in;
  }
  const Block mine{rows[rank], rows[rank + 1]};

  // 1. The columns' absmax over the global batch: a max of local ones.
  const auto absmax = sized(workspace.absmax, "absmax", in + out);
  TernaryCounter::Impl::int8_column_absmax(space, x_local, grad_out_local, absmax);
  on_host(space, absmax, 0, in + out,
          [&](std::uint32_t* bits) { ring_all_reduce_max(comm, bits, in + out); });

  // 2. This rank's int32 partial sums, its samples quantized on the global streams.
  const auto sums = sized(workspace.sums, "sums", out, in);
  TernaryCounter::Impl::int8_gradient_sums(space, x_local, grad_out_local, absmax, params.seed,
                                           params.row_offset, m, offset, sums);

  // 3. The sums of this rank's rows over all ranks (exact in any order).
  on_host(space, sums, elements[rank], elements[rank + 1],
          [&](std::int32_t* data) { ring_reduce_scatter_sum(comm, data, elements); });

  // 4. This rank's rows, then every rank's rows to every rank.
  const SkippedRowsView<typename ExecSpace::memory_space> skipped(
      Kokkos::view_alloc(space, "TernaryCounter::Distributed::skipped_rows"));
  UpdateParams p = params;
  p.row_offset = params.row_offset + mine.first;
  TernaryCounter::Impl::int8_update_from_sums(
      space, state.row_range(mine.first, mine.last),
      Kokkos::subview(sums, std::pair<std::int64_t, std::int64_t>(mine.first, mine.last),
                      Kokkos::ALL),
      absmax, mine.first, p, skipped);
  const UpdateReport report = TernaryCounter::Impl::wait_for_report(space, skipped);
  all_gather_rows(comm, space,
                  {{nullptr, state.codes.data(), std::int64_t(state.codes.extent(1)), rows},
                   {nullptr, state.scale.data(), std::int64_t(sizeof(float)), rows},
                   {nullptr, state.v.data(), std::int64_t(sizeof(float)), rows}});
  return report.skipped_rows;
}

#define TERNARYCOUNTER_INSTANTIATE_INTEGER_UPDATE(SPACE)                            \
  template std::int64_t integer_update<SPACE>(                                      \
      const Communicator&, const SPACE&, const PackedState<SPACE::memory_space>&,   \
      const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&, \
      const UpdateParams&, const std::vector<std::int64_t>&,                        \
      UpdateWorkspace<SPACE::memory_space>&);

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_INTEGER_UPDATE)

}  // namespace TernaryCounter::Distributed::Impl
