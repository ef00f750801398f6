#include "TernaryCounter_Update.hpp"

#include "impl/TernaryCounter_ExecutionSpaces.hpp"

#include <Kokkos_Profiling_ScopedRegion.hpp>
#include "impl/TernaryCounter_RowUpdateKernel.hpp"
#include "impl/TernaryCounter_Validation.hpp"

namespace TernaryCounter {

template <class ExecSpace>
UpdateReport update(const ExecSpace& space,
                    const PackedState<typename ExecSpace::memory_space>& state,
                    const Kokkos::View<const float**, Kokkos::LayoutRight,
                                       typename ExecSpace::memory_space>& grad_w,
                    const UpdateParams& params) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::update");
  Impl::validate_state("update", state, params);
  Impl::require_extent("update", "grad_w.extent(0)", grad_w.extent(0), "the state's out",
                       state.out());
  Impl::require_extent("update", "grad_w.extent(1)", grad_w.extent(1), "the state's in",
                       state.in());
  Impl::RowUpdateKernel<ExecSpace> kernel{state.codes, state.scale, state.v, grad_w,
                                          make_update_constants(params, state.in())};
  return UpdateReport{kernel.run(space, params.team_size)};
}

#define TERNARYCOUNTER_INSTANTIATE_UPDATE(SPACE)                                    \
  template UpdateReport update<SPACE>(                                              \
      const SPACE&, const PackedState<SPACE::memory_space>&,                        \
      const Kokkos::View<const float**, Kokkos::LayoutRight, SPACE::memory_space>&, \
      const UpdateParams&);

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_UPDATE)

}  // namespace TernaryCounter
