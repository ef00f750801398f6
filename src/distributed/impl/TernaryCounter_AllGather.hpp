// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// All-gather of row blocks in rank order, the last collective of the sharded updates. Host memory:
// a ring of MPI point-to-point messages (TernaryCounter_Ring.hpp). CUDA memory: NCCL (a group of
// one broadcast per rank, since NCCL has no variable-count all-gather) when the build has it,
// otherwise staged through host memory.
#pragma once

#include "TernaryCounter_Communicator.hpp"

#include <cstdint>
#include <vector>

namespace TernaryCounter::Distributed::Impl {

/// One all-gather: rank r's rows [first[r], first[r+1]) of `row_bytes` bytes each land at that
/// row of `recv`; `send` holds this rank's rows (nullptr: they are in place in `recv`).
struct RowGather {
  const void* send;
  void* recv;
  std::int64_t row_bytes;
  std::vector<std::int64_t> first;  ///< size() + 1 row offsets, ascending
};

/// Collective over comm: runs the gathers (in the memory of ExecSpace) after the work already
/// on `space`. On return the host path is complete; the NCCL path is enqueued on space's stream
/// (later work on `space` sees the data). Throws std::runtime_error on a library error.
template <class ExecSpace>
void all_gather_rows(const Communicator& comm, const ExecSpace& space,
                     const std::vector<RowGather>& gathers);

}  // namespace TernaryCounter::Distributed::Impl
