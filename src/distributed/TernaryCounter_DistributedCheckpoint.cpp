// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TernaryCounter_DistributedCheckpoint.hpp"

#include "distributed/impl/TernaryCounter_Agreement.hpp"

namespace TernaryCounter::Distributed::Impl {

void agree_on_checkpoint(const Communicator& comm, const char* where,
                         const std::string& local_error) {
  const std::string error = first_error(comm, local_error);
  if (!error.empty()) throw CheckpointError(std::string(where) + ": " + error);
}

}  // namespace TernaryCounter::Distributed::Impl
