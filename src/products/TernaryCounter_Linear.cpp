// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TernaryCounter_Linear.hpp"

#include "engines/TernaryCounter_ExecutionSpaces.hpp"
#include "core/TernaryCounter_Validation.hpp"
#include "products/impl/TernaryCounter_ProductDispatch.hpp"

#include <Kokkos_Profiling_ScopedRegion.hpp>

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

namespace TernaryCounter {

namespace Impl {

template <class MemorySpace>
void validate_layer(const char* call, const PackedState<MemorySpace>& state) {
  if (state.codes.extent(1) % bytes_per_group != 0) {
    std::ostringstream msg;
    msg << "TernaryCounter::" << call << ": the state's codes have " << state.codes.extent(1)
        << " bytes per row, not a multiple of 3";
    throw std::invalid_argument(msg.str());
  }
  if (state.C < min_counter_depth || state.C > max_counter_depth) {
    std::ostringstream msg;
    msg << "TernaryCounter::" << call << ": state.C = " << state.C << " must be in [2, 11]";
    throw std::invalid_argument(msg.str());
  }
  require_extent(call, "state.scale.extent(0)", state.scale.extent(0), "the state's out",
                 state.out());
}

}  // namespace Impl

template <class ExecSpace>
void forward(const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
             const InputView<typename ExecSpace::memory_space>& x,
             const OutputView<typename ExecSpace::memory_space>& y, const ProductOptions& options) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::forward");
  Impl::validate_layer("forward", state);
  Impl::require_precision("forward", options.precision);
  Impl::require_extent("forward", "x.extent(1)", x.extent(1), "the state's in", state.in());
  Impl::require_extent("forward", "y.extent(1)", y.extent(1), "the state's out", state.out());
  Impl::require_extent("forward", "y.extent(0) (M)", y.extent(0), "x.extent(0) (M)", x.extent(0));
  Impl::dispatch_forward(space, state, x, y, options);
}

template <class ExecSpace>
void backward_input(const ExecSpace& space,
                    const PackedState<typename ExecSpace::memory_space>& state,
                    const InputView<typename ExecSpace::memory_space>& grad_out,
                    const OutputView<typename ExecSpace::memory_space>& grad_x,
                    const ProductOptions& options) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::backward_input");
  Impl::validate_layer("backward_input", state);
  Impl::require_precision("backward_input", options.precision);
  Impl::require_extent("backward_input", "grad_out.extent(1)", grad_out.extent(1),
                       "the state's out", state.out());
  Impl::require_extent("backward_input", "grad_x.extent(1)", grad_x.extent(1), "the state's in",
                       state.in());
  Impl::require_extent("backward_input", "grad_x.extent(0) (M)", grad_x.extent(0),
                       "grad_out.extent(0) (M)", grad_out.extent(0));
  Impl::dispatch_backward_input(space, state, grad_out, grad_x, options);
}

#define TERNARYCOUNTER_INSTANTIATE_LINEAR(SPACE)                                               \
  template void forward<SPACE>(const SPACE&, const PackedState<SPACE::memory_space>&,          \
                               const InputView<SPACE::memory_space>&,                          \
                               const OutputView<SPACE::memory_space>&, const ProductOptions&); \
  template void backward_input<SPACE>(const SPACE&, const PackedState<SPACE::memory_space>&,   \
                                      const InputView<SPACE::memory_space>&,                   \
                                      const OutputView<SPACE::memory_space>&,                  \
                                      const ProductOptions&);

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_LINEAR)

}  // namespace TernaryCounter
