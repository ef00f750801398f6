// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Checkpoints of data-parallel runs: every rank holds the whole state, so rank 0 writes the one
// file (crash-safely, see save_checkpoint) and every rank reads it. Both calls are collective and
// fail alike on every rank.
#pragma once

#include "TernaryCounter_Communicator.hpp"

#include <TernaryCounter_Checkpoint.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace TernaryCounter::Distributed {

namespace Impl {
/// Collective: throws CheckpointError("<where>: rank R: <error>") on every rank when any rank
/// has a local error (the lowest such rank's), else returns.
void agree_on_checkpoint(const Communicator& comm, const char* where,
                         const std::string& local_error);
}  // namespace Impl

/// Collective: rank 0 saves the layers (TernaryCounter::save_layers); the others wait for it.
/// On a failure every rank throws the same CheckpointError.
template <class MemorySpace>
void save_layers(const Communicator& comm, const std::string& path,
                 const std::vector<std::pair<std::string, PackedState<MemorySpace>>>& layers,
                 std::int64_t step, const std::map<std::string, std::string>& metadata = {}) {
  std::string error;
  if (comm.rank() == 0) {
    try {
      TernaryCounter::save_layers(path, layers, step, metadata);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  Impl::agree_on_checkpoint(comm, "TernaryCounter::Distributed::save_layers", error);
}

/// Collective: copies layer `name` of `checkpoint` (which every rank read from `source`) into
/// each target, but only when every rank's checks passed (see TernaryCounter::copy_layers);
/// otherwise every rank throws the same CheckpointError and no target changes on any rank.
template <class MemorySpace>
void copy_layers(const Communicator& comm, const Checkpoint& checkpoint, const std::string& source,
                 const std::vector<std::pair<std::string, PackedState<MemorySpace>>>& targets) {
  std::vector<std::pair<std::string, PackedState<Kokkos::HostSpace>>> staged;
  std::string error;
  try {
    for (const auto& [name, target] : targets) {
      staged.emplace_back(name,
                          create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, target));
    }
    TernaryCounter::copy_layers(checkpoint, source, staged);
  } catch (const std::exception& e) {
    error = e.what();
  }
  Impl::agree_on_checkpoint(comm, "TernaryCounter::Distributed::load_layers", error);
  for (std::size_t k = 0; k < targets.size(); ++k) {
    TernaryCounter::deep_copy(targets[k].second, staged[k].second);
  }
}

/// Collective: every rank reads `path` into host copies of its targets; only when every rank
/// succeeded are the targets overwritten. Otherwise every rank throws the same CheckpointError
/// and no target changes on any rank.
template <class MemorySpace>
Checkpoint load_layers(
    const Communicator& comm, const std::string& path,
    const std::vector<std::pair<std::string, PackedState<MemorySpace>>>& targets) {
  Checkpoint checkpoint;
  std::string error;
  try {
    checkpoint = read_checkpoint(path);
  } catch (const std::exception& e) {
    error = e.what();
  }
  Impl::agree_on_checkpoint(comm, "TernaryCounter::Distributed::load_layers", error);
  copy_layers(comm, checkpoint, path, targets);
  return checkpoint;
}

}  // namespace TernaryCounter::Distributed
