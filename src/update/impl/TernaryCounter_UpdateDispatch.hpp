// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The one dispatcher of update and update_from_io: the public calls check their arguments and
// hand over here; this reads the precision, the backend and the host's instruction sets once,
// forms the weight gradient with the engine it picks and runs the row update, chunk by chunk
// (UpdateDispatch.cpp). A new engine is hooked in there.
#pragma once

#include "TernaryCounter_PackedState.hpp"
#include "TernaryCounter_Params.hpp"
#include "TernaryCounter_Precision.hpp"
#include "TernaryCounter_ViewTypes.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

/// Enqueues the update of every row from grad_w on `space` (arguments already checked).
template <class ExecSpace>
void dispatch_update(const ExecSpace& space,
                     const PackedState<typename ExecSpace::memory_space>& state,
                     const InputView<typename ExecSpace::memory_space>& grad_w,
                     const UpdateParams& params,
                     const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows);

/// Enqueues the update of every row from x and grad_out on `space`, workspace.extent(0) rows of
/// the gradient at most at a time (arguments already checked). T: float, or 16-bit x and
/// grad_out (HalfFloats.hpp), which int8 quantizes as it reads them and FP32 widens first.
template <class ExecSpace, class T = float>
void dispatch_update_from_io(const ExecSpace& space,
                             const PackedState<typename ExecSpace::memory_space>& state,
                             const InputView<typename ExecSpace::memory_space, T>& x,
                             const InputView<typename ExecSpace::memory_space, T>& grad_out,
                             const UpdateParams& params, Precision precision,
                             const OutputView<typename ExecSpace::memory_space>& workspace,
                             const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows);

/// Enqueues the FP32 weight gradient of x and grad_out into grad_w [out, in], its chains from 0
/// or (accumulate) continued from grad_w's values (arguments already checked).
template <class ExecSpace>
void dispatch_gradient_from_io(const ExecSpace& space,
                               const InputView<typename ExecSpace::memory_space>& x,
                               const InputView<typename ExecSpace::memory_space>& grad_out,
                               const OutputView<typename ExecSpace::memory_space>& grad_w,
                               bool accumulate);

/// Rows per chunk of the FP32 gradient, at most max_rows (see UpdateDispatch.cpp).
template <class ExecSpace>
std::int64_t balanced_chunk_rows(const ExecSpace& space, std::int64_t out, std::int64_t in,
                                 std::int64_t max_rows);

}  // namespace TernaryCounter::Impl
