// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The one dispatcher of forward and backward_input: the public calls check their arguments and
// hand over here; this reads the precision, the backend, the shape and the host's instruction
// sets once and picks the engine (ProductDispatch.cpp). A new engine is hooked in there.
#pragma once

#include "TernaryCounter_PackedState.hpp"
#include "TernaryCounter_Precision.hpp"
#include "TernaryCounter_ViewTypes.hpp"

#include <cstdint>

namespace TernaryCounter::Impl {

/// y = x W^T (arguments already checked). T, U: float, or a 16-bit input with a float or
/// same-typed output (HalfFloats.hpp): int8 reads and writes them directly; FP32 runs on a float
/// widening of the input.
template <class ExecSpace, class T = float, class U = float>
void dispatch_forward(const ExecSpace& space,
                      const PackedState<typename ExecSpace::memory_space>& state,
                      const InputView<typename ExecSpace::memory_space, T>& x,
                      const OutputView<typename ExecSpace::memory_space, U>& y,
                      const ProductOptions& options);

/// grad_x = grad_out W (arguments already checked; T, U as dispatch_forward's).
template <class ExecSpace, class T = float, class U = float>
void dispatch_backward_input(const ExecSpace& space,
                             const PackedState<typename ExecSpace::memory_space>& state,
                             const InputView<typename ExecSpace::memory_space, T>& grad_out,
                             const OutputView<typename ExecSpace::memory_space, U>& grad_x,
                             const ProductOptions& options);

}  // namespace TernaryCounter::Impl
