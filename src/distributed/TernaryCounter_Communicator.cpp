#include "TernaryCounter_Communicator.hpp"

#include "impl/TernaryCounter_MpiCheck.hpp"

#ifdef TERNARYCOUNTER_HAVE_NCCL
#include <nccl.h>
#endif

#include <stdexcept>
#include <string>

namespace TernaryCounter::Distributed {

struct Communicator::State {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
#ifdef TERNARYCOUNTER_HAVE_NCCL
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

bool Communicator::with_nccl() {
#ifdef TERNARYCOUNTER_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

void* Communicator::nccl() const {
#ifdef TERNARYCOUNTER_HAVE_NCCL
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
