// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The processes that train layers together (TernaryCounter::Distributed): an MPI communicator of
// the library's own and, in builds with NCCL, an NCCL communicator over the same ranks.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

namespace TernaryCounter::Distributed {

/// A duplicate of an MPI communicator, so the library's messages never match the application's.
/// Copies share it; the last copy frees it (call that before MPI_Finalize). In a build with NCCL
/// the first device all-gather creates an NCCL communicator over the same ranks (ncclUniqueId
/// from rank 0 by MPI_Bcast) when every rank has a GPU of its own (Kokkos maps the node-local
/// MPI rank to a device by default); ranks that share a GPU, which NCCL refuses, all-gather
/// through host memory instead, with the same bytes.
class Communicator {
 public:
  /// Collective over `comm`. MPI must be initialized. Throws std::runtime_error on an MPI error.
  explicit Communicator(MPI_Comm comm = MPI_COMM_WORLD);

  int rank() const;
  int size() const;
  /// The library's duplicate (for callers that add their own collectives beside the library's).
  MPI_Comm mpi() const;

  /// Bytes this rank has sent through the library's collectives on this communicator (and its
  /// copies) since it was made or last reset: on hosts the bytes the library's ring collectives
  /// handed to MPI_Isend; with NCCL the bytes NCCL's ring sends for the calls' sizes.
  std::int64_t bytes_sent() const;
  void reset_bytes_sent() const;
  /// Adds to bytes_sent() (the library's collectives, and callers who add their own).
  void count_sent(std::int64_t bytes) const;

  /// Whether this build has NCCL for CUDA buffers (otherwise they go through host memory).
  static bool with_nccl();

  /// Whether these ranks move CUDA buffers with NCCL: the build has it and no two ranks of a node
  /// use the same GPU (told apart by PCI bus id). Collective on its first call, so every rank must
  /// reach that in the same call; then cached. When ranks share a GPU, rank 0 says so once on
  /// stderr.
  bool uses_nccl() const;

  /// The NCCL communicator (an ncclComm_t) created on first use: collective, so every rank must
  /// reach its first use in the same call. Throws std::runtime_error unless uses_nccl().
  void* nccl() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace TernaryCounter::Distributed
