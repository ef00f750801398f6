// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The dense counter update: the weight gradient is given (SPEC §3, dense path).
#pragma once

#include "TernaryCounter_PackedState.hpp"
#include "TernaryCounter_Params.hpp"
#include "TernaryCounter_ViewTypes.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace TernaryCounter {

/// One update step of every row of `state` from `grad_w` [out, in] on `space`.
/// Rows whose gradient is not finite are left untouched and counted in the report.
/// Throws std::invalid_argument (and changes nothing) on bad params or extents.
/// Blocks until the update is done (it returns the count); see the overload below for one that
/// does not.
template <class ExecSpace>
UpdateReport update(const ExecSpace& space,
                    const PackedState<typename ExecSpace::memory_space>& state,
                    const Kokkos::View<const float**, Kokkos::LayoutRight,
                                       typename ExecSpace::memory_space>& grad_w,
                    const UpdateParams& params);

/// Asynchronous: enqueues the update on `space` and returns at once, without a fence; when the
/// work is done, `skipped_rows()` holds the number of rows left untouched. Arguments are checked
/// before anything is enqueued (std::invalid_argument, nothing changed).
template <class ExecSpace>
void update(const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
            const Kokkos::View<const float**, Kokkos::LayoutRight,
                               typename ExecSpace::memory_space>& grad_w,
            const UpdateParams& params,
            const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows);

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
