// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The integer path's data-parallel update (SPEC §7): the columns' absmax all-reduced by max, each
// rank's int32 partial sums of the weight gradient reduce-scattered by row blocks, each rank's
// row update, an all-gather of the rows. The traffic is about 4.75 bytes per weight per step,
// whatever the batch and the rank count.
#pragma once

#include "TernaryCounter_Communicator.hpp"
#include "TernaryCounter_DistributedUpdate.hpp"

#include <cstdint>
#include <vector>

namespace TernaryCounter::Distributed::Impl {

/// The update after the ranks agreed (`samples`: every rank's sample count, in rank order):
/// returns the rows this rank skipped. Collective.
template <class ExecSpace>
std::int64_t integer_update(const Communicator& comm, const ExecSpace& space,
                            const PackedState<typename ExecSpace::memory_space>& state,
                            const InputView<typename ExecSpace::memory_space>& x_local,
                            const InputView<typename ExecSpace::memory_space>& grad_out_local,
                            const UpdateParams& params, const std::vector<std::int64_t>& samples,
                            UpdateWorkspace<typename ExecSpace::memory_space>& workspace);

}  // namespace TernaryCounter::Distributed::Impl
