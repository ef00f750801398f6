// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TernaryCounter_Communicator.hpp"

#include "distributed/impl/TernaryCounter_MpiCheck.hpp"

#ifdef TERNARYCOUNTER_HAVE_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace TernaryCounter::Distributed {

struct Communicator::State {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  std::int64_t bytes_sent = 0;
#ifdef TERNARYCOUNTER_HAVE_NCCL
  int uses_nccl = -1;  ///< not asked yet
  ncclComm_t nccl = nullptr;
#endif

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    // After MPI_Finalize nothing can be freed any more; the process is ending anyway.
    if (finalized) return;
#ifdef TERNARYCOUNTER_HAVE_NCCL
    if (nccl != nullptr) ncclCommDestroy(nccl);
#endif
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};

Communicator::Communicator(MPI_Comm comm) : state_(std::make_shared<State>()) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    throw std::runtime_error(
        "TernaryCounter::Distributed::Communicator: MPI is not initialized (call MPI_Init first)");
  }
  Impl::mpi_check(MPI_Comm_dup(comm, &state_->comm), "MPI_Comm_dup");
  Impl::mpi_check(MPI_Comm_rank(state_->comm, &state_->rank), "MPI_Comm_rank");
  Impl::mpi_check(MPI_Comm_size(state_->comm, &state_->size), "MPI_Comm_size");
}

int Communicator::rank() const {
  return state_->rank;
}
int Communicator::size() const {
  return state_->size;
}
MPI_Comm Communicator::mpi() const {
  return state_->comm;
}
std::int64_t Communicator::bytes_sent() const {
  return state_->bytes_sent;
}
void Communicator::reset_bytes_sent() const {
  state_->bytes_sent = 0;
}
void Communicator::count_sent(std::int64_t bytes) const {
  state_->bytes_sent += bytes;
}

bool Communicator::with_nccl() {
#ifdef TERNARYCOUNTER_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

#ifdef TERNARYCOUNTER_HAVE_NCCL
namespace {

/// Whether two ranks of this node use the same GPU (collective over `comm`).
bool node_shares_a_gpu(MPI_Comm comm, int rank) {
  constexpr int id_chars = 32;
  char bus_id[id_chars] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetPCIBusId(bus_id, id_chars, device) != cudaSuccess) {
    throw std::runtime_error("TernaryCounter::Distributed: cannot read this rank's CUDA device");
  }
  MPI_Comm node;
  Impl::mpi_check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
                  "MPI_Comm_split_type");
  int node_size = 1;
  MPI_Comm_size(node, &node_size);
  std::vector<char> ids(std::size_t(node_size) * id_chars);
  const int code = MPI_Allgather(bus_id, id_chars, MPI_CHAR, ids.data(), id_chars, MPI_CHAR, node);
  MPI_Comm_free(&node);
  Impl::mpi_check(code, "MPI_Allgather");
  int shared = 0;
  for (int a = 0; a < node_size; ++a) {
    for (int b = a + 1; b < node_size; ++b) {
      if (std::string(&ids[a * id_chars]) == std::string(&ids[b * id_chars])) shared = 1;
    }
  }
  int anywhere = 0;
  Impl::mpi_check(MPI_Allreduce(&shared, &anywhere, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  return anywhere != 0;
}

}  // namespace
#endif

bool Communicator::uses_nccl() const {
#ifdef TERNARYCOUNTER_HAVE_NCCL
  if (state_->uses_nccl < 0) {
    const bool shared = node_shares_a_gpu(state_->comm, state_->rank);
    state_->uses_nccl = shared ? 0 : 1;
    if (shared && state_->rank == 0) {
      std::fprintf(stderr,
                   "TernaryCounter::Distributed: ranks share a GPU (NCCL needs one per rank); "
                   "device buffers are all-gathered through host memory by MPI\n");
    }
  }
  return state_->uses_nccl == 1;
#else
  return false;
#endif
}

void* Communicator::nccl() const {
#ifdef TERNARYCOUNTER_HAVE_NCCL
  if (!uses_nccl()) {
    throw std::runtime_error(
        "TernaryCounter::Distributed::Communicator::nccl: ranks share a GPU, which NCCL refuses");
  }
  if (state_->nccl == nullptr) {
    ncclUniqueId id;
    if (state_->rank == 0) {
      const ncclResult_t r = ncclGetUniqueId(&id);
      if (r != ncclSuccess) {
        throw std::runtime_error(std::string("TernaryCounter::Distributed: ncclGetUniqueId: ") +
                                 ncclGetErrorString(r));
      }
    }
    Impl::mpi_check(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, state_->comm), "MPI_Bcast");
    const ncclResult_t r = ncclCommInitRank(&state_->nccl, state_->size, id, state_->rank);
    if (r != ncclSuccess) {
      state_->nccl = nullptr;
      throw std::runtime_error(std::string("TernaryCounter::Distributed: ncclCommInitRank: ") +
                               ncclGetErrorString(r));
    }
  }
  return state_->nccl;
#else
  throw std::runtime_error(
      "TernaryCounter::Distributed::Communicator::nccl: this build has no NCCL");
#endif
}

}  // namespace TernaryCounter::Distributed
