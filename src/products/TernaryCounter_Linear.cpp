// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TernaryCounter_Linear.hpp"

#include "core/TernaryCounter_Validation.hpp"
#include "engines/TernaryCounter_ExecutionSpaces.hpp"
#include "products/impl/TernaryCounter_ProductDispatch.hpp"

#include <Kokkos_Profiling_ScopedRegion.hpp>

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

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

namespace {

/// The checks of forward and backward_input: the state, the precision, and the extents of the
/// input [M, depth] and the output [M, width] (forward: depth in, width out).
template <class MemorySpace, class Input, class Output>
void validate_product(const char* call, const PackedState<MemorySpace>& state,
                      const ProductOptions& options, const Input& input, const char* input_name,
                      const Output& output, const char* output_name, bool forward) {
  Impl::validate_layer(call, state);
  Impl::require_precision(call, options.precision);
  const std::int64_t depth = forward ? state.in() : state.out();
  const std::int64_t width = forward ? state.out() : state.in();
  const std::string in = input_name, out = output_name;
  Impl::require_extent(call, (in + ".extent(1)").c_str(), input.extent(1),
                       forward ? "the state's in" : "the state's out", depth);
  Impl::require_extent(call, (out + ".extent(1)").c_str(), output.extent(1),
                       forward ? "the state's out" : "the state's in", width);
  Impl::require_extent(call, (out + ".extent(0) (M)").c_str(), output.extent(0),
                       (in + ".extent(0) (M)").c_str(), input.extent(0));
}

/// forward and backward_input of any element types: the checks, then the one dispatcher.
template <class ExecSpace, class T, class U>
void checked_forward(const ExecSpace& space,
                     const PackedState<typename ExecSpace::memory_space>& state,
                     const InputView<typename ExecSpace::memory_space, T>& x,
                     const OutputView<typename ExecSpace::memory_space, U>& y,
                     const ProductOptions& options) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::forward");
  validate_product("forward", state, options, x, "x", y, "y", true);
  Impl::dispatch_forward(space, state, x, y, options);
}

template <class ExecSpace, class T, class U>
void checked_backward_input(const ExecSpace& space,
                            const PackedState<typename ExecSpace::memory_space>& state,
                            const InputView<typename ExecSpace::memory_space, T>& grad_out,
                            const OutputView<typename ExecSpace::memory_space, U>& grad_x,
                            const ProductOptions& options) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::backward_input");
  validate_product("backward_input", state, options, grad_out, "grad_out", grad_x, "grad_x", false);
  Impl::dispatch_backward_input(space, state, grad_out, grad_x, options);
}

}  // namespace

template <class ExecSpace>
void forward(const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
             const InputView<typename ExecSpace::memory_space>& x,
             const OutputView<typename ExecSpace::memory_space>& y, const ProductOptions& options) {
  checked_forward(space, state, x, y, options);
}

template <class ExecSpace>
void backward_input(const ExecSpace& space,
                    const PackedState<typename ExecSpace::memory_space>& state,
                    const InputView<typename ExecSpace::memory_space>& grad_out,
                    const OutputView<typename ExecSpace::memory_space>& grad_x,
                    const ProductOptions& options) {
  checked_backward_input(space, state, grad_out, grad_x, options);
}

template <class ExecSpace, class T, class U>
void Impl::forward_half(const ExecSpace& space,
                        const PackedState<typename ExecSpace::memory_space>& state,
                        const InputView<typename ExecSpace::memory_space, T>& x,
                        const OutputView<typename ExecSpace::memory_space, U>& y,
                        const ProductOptions& options) {
  checked_forward(space, state, x, y, options);
}

template <class ExecSpace, class T, class U>
void Impl::backward_input_half(const ExecSpace& space,
                               const PackedState<typename ExecSpace::memory_space>& state,
                               const InputView<typename ExecSpace::memory_space, T>& grad_out,
                               const OutputView<typename ExecSpace::memory_space, U>& grad_x,
                               const ProductOptions& options) {
  checked_backward_input(space, state, grad_out, grad_x, options);
}

#define TERNARYCOUNTER_INSTANTIATE_LINEAR(SPACE)                                               \
  template void forward<SPACE>(const SPACE&, const PackedState<SPACE::memory_space>&,          \
                               const InputView<SPACE::memory_space>&,                          \
                               const OutputView<SPACE::memory_space>&, const ProductOptions&); \
  template void backward_input<SPACE>(const SPACE&, const PackedState<SPACE::memory_space>&,   \
                                      const InputView<SPACE::memory_space>&,                   \
                                      const OutputView<SPACE::memory_space>&,                  \
                                      const ProductOptions&);

#define TERNARYCOUNTER_INSTANTIATE_LINEAR_WIDENED(SPACE, T, U)                             \
  template void Impl::forward_half<SPACE, T, U>(                                           \
      const SPACE&, const PackedState<SPACE::memory_space>&,                               \
      const InputView<SPACE::memory_space, T>&, const OutputView<SPACE::memory_space, U>&, \
      const ProductOptions&);                                                              \
  template void Impl::backward_input_half<SPACE, T, U>(                                    \
      const SPACE&, const PackedState<SPACE::memory_space>&,                               \
      const InputView<SPACE::memory_space, T>&, const OutputView<SPACE::memory_space, U>&, \
      const ProductOptions&);
#define TERNARYCOUNTER_INSTANTIATE_LINEAR_HALF(SPACE)                  \
  TERNARYCOUNTER_INSTANTIATE_LINEAR_WIDENED(SPACE, bfloat16, float)    \
  TERNARYCOUNTER_INSTANTIATE_LINEAR_WIDENED(SPACE, bfloat16, bfloat16) \
  TERNARYCOUNTER_INSTANTIATE_LINEAR_WIDENED(SPACE, float16, float)     \
  TERNARYCOUNTER_INSTANTIATE_LINEAR_WIDENED(SPACE, float16, float16)

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_LINEAR)
TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_LINEAR_HALF)

}  // namespace TernaryCounter
