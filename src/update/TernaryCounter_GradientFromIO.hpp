// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The FP32 weight gradient of SPEC §3 step 1 formed into a caller's [out, in] matrix, for
// accumulation over micro-batches: the chains of a later micro-batch continue those of the
// earlier ones, so the dense update from the accumulated gradient is update_from_io over the
// micro-batches' concatenation, bit for bit. Its memory is one gradient, whatever the batch.
#pragma once

#include "TernaryCounter_ViewTypes.hpp"

#include <Kokkos_Core.hpp>

namespace TernaryCounter {

/// Enqueues grad_w(o, i) = SPEC §3's chain over the samples of x [M, in] and grad_out [M, out]
/// (`accumulate` false: from 0; true: continuing from grad_w's values) on `space`, without a
/// fence. Throws std::invalid_argument (nothing enqueued) on extents that disagree.
template <class ExecSpace>
void gradient_from_io(const ExecSpace& space, const InputView<typename ExecSpace::memory_space>& x,
                      const InputView<typename ExecSpace::memory_space>& grad_out,
                      const OutputView<typename ExecSpace::memory_space>& grad_w, bool accumulate);

}  // namespace TernaryCounter
