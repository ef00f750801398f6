// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TernaryCounter_Update.hpp"

#include "engines/TernaryCounter_ExecutionSpaces.hpp"

#include <Kokkos_Profiling_ScopedRegion.hpp>
#include "core/TernaryCounter_Validation.hpp"
#include "update/impl/TernaryCounter_RowUpdateKernel.hpp"
#include "update/impl/TernaryCounter_UpdateDispatch.hpp"

namespace TernaryCounter {

template <class ExecSpace>
void update(const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
            const Kokkos::View<const float**, Kokkos::LayoutRight,
                               typename ExecSpace::memory_space>& grad_w,
            const UpdateParams& params,
            const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::update");
  Impl::validate_state("update", state, params);
  Impl::require_extent("update", "grad_w.extent(0)", grad_w.extent(0), "the state's out",
                       state.out());
  Impl::require_extent("update", "grad_w.extent(1)", grad_w.extent(1), "the state's in",
                       state.in());
  Impl::require_allocated("update", "skipped_rows", skipped_rows);
  Impl::RowUpdateKernel<ExecSpace>::resolve_team_size(space, params.team_size, state.in());
  Impl::dispatch_update(space, state, grad_w, params, skipped_rows);
}

template <class ExecSpace>
UpdateReport update(const ExecSpace& space,
                    const PackedState<typename ExecSpace::memory_space>& state,
                    const Kokkos::View<const float**, Kokkos::LayoutRight,
                                       typename ExecSpace::memory_space>& grad_w,
                    const UpdateParams& params) {
  const SkippedRowsView<typename ExecSpace::memory_space> skipped(
      Kokkos::view_alloc(space, "TernaryCounter::update::skipped_rows"));
  update(space, state, grad_w, params, skipped);
  return Impl::wait_for_report(space, skipped);
}

#define TERNARYCOUNTER_INSTANTIATE_UPDATE(SPACE)                                    \
  template UpdateReport update<SPACE>(                                              \
      const SPACE&, const PackedState<SPACE::memory_space>&,                        \
      const Kokkos::View<const float**, Kokkos::LayoutRight, SPACE::memory_space>&, \
      const UpdateParams&);                                                         \
  template void update<SPACE>(                                                      \
      const SPACE&, const PackedState<SPACE::memory_space>&,                        \
      const Kokkos::View<const float**, Kokkos::LayoutRight, SPACE::memory_space>&, \
      const UpdateParams&, const SkippedRowsView<SPACE::memory_space>&);

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_UPDATE)

}  // namespace TernaryCounter
