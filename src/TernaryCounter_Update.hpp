// The dense counter update: the weight gradient is given (SPEC §3, dense path).
#pragma once

#include "TernaryCounter_PackedState.hpp"
#include "TernaryCounter_Params.hpp"
#include "impl/TernaryCounter_ViewTypes.hpp"

#include <Kokkos_Core.hpp>

#include <type_traits>

namespace TernaryCounter {

/// One update step of every row of `state` from `grad_w` [out, in] on `space`.
/// Rows whose gradient is not finite are left untouched and counted in the report.
/// Throws std::invalid_argument (and changes nothing) on bad params or extents.
template <class ExecSpace>
UpdateReport update(const ExecSpace& space,
                    const PackedState<typename ExecSpace::memory_space>& state,
                    const Kokkos::View<const float**, Kokkos::LayoutRight,
                                       typename ExecSpace::memory_space>& grad_w,
                    const UpdateParams& params);

/// The same on the default execution space of the state's memory space.
template <class MemorySpace>
UpdateReport update(
    const PackedState<MemorySpace>& state,
    const std::type_identity_t<Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace>>&
        grad_w,
    const UpdateParams& params) {
  return update(typename MemorySpace::execution_space{}, state, grad_w, params);
}

/// Any other View type for grad_w (e.g. LayoutLeft): a compile error saying what is expected.
template <class ExecSpace, class GradView>
requires Impl::NotInputMatrix<GradView, typename ExecSpace::memory_space> UpdateReport
update(const ExecSpace&, const PackedState<typename ExecSpace::memory_space>&, const GradView&,
       const UpdateParams&) {
  static_assert(Impl::dependent_false<GradView>,
                TERNARYCOUNTER_MATRIX_RULE("update", "grad_w", "const float"));
  return {};
}
template <class MemorySpace, class GradView>
requires Impl::NotInputMatrix<GradView, MemorySpace> UpdateReport
update(const PackedState<MemorySpace>&, const GradView&, const UpdateParams&) {
  static_assert(Impl::dependent_false<GradView>,
                TERNARYCOUNTER_MATRIX_RULE("update", "grad_w", "const float"));
  return {};
}

}  // namespace TernaryCounter
