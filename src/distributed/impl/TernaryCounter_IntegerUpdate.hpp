// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The integer path's data-parallel update (SPEC §7): the columns' absmax all-reduced by max, each
// rank's int32 partial sums of the weight gradient reduce-scattered by row blocks, each rank's
// row update, an all-gather of the rows. The traffic is about 4.75 bytes per weight per step,
// whatever the batch and the rank count. The sums move in rounds (a slice of every rank's block
// per round), so their buffer stays within the update's workspace budget.
#pragma once

#include "TernaryCounter_Communicator.hpp"
#include "TernaryCounter_DistributedUpdate.hpp"

#include "TernaryCounter_DataParallelPhases.hpp"

#include <cstdint>
#include <vector>

namespace TernaryCounter::Distributed::Impl {

/// The int8 route's buffers: the columns' absmax [in + out], the local samples' quantized
/// operands, and one round's int32 sums [size x rows per round, in].
template <class MemorySpace>
struct IntegerWorkspace {
  TernaryCounter::Experimental::AbsmaxBits<MemorySpace> absmax;
  TernaryCounter::Experimental::Int8GradientOperands<MemorySpace> operands;
  TernaryCounter::Experimental::IntegerSums<MemorySpace> sums;
};

/// Rows of each rank's block per round of the reduce-scatter: a round's sums (size ranks x rows
/// x in int32) fit in `budget_bytes` (0: the backend's update workspace default), at least 1.
template <class ExecSpace>
std::int64_t integer_round_rows(std::int64_t in, int size, std::int64_t budget_bytes);

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
