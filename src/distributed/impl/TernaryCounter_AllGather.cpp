// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "distributed/impl/TernaryCounter_AllGather.hpp"

#include "distributed/impl/TernaryCounter_MpiCheck.hpp"
#include "distributed/impl/TernaryCounter_Ring.hpp"
#include "engines/TernaryCounter_ExecutionSpaces.hpp"

#include <Kokkos_Core.hpp>

#ifdef TERNARYCOUNTER_HAVE_NCCL
#include <nccl.h>
#endif

#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace TernaryCounter::Distributed::Impl {

namespace {

/// Copies this rank's rows into place when they are not there already.
template <class Memory>
void place_own_rows(const Communicator& comm, const RowGather& g, void* recv) {
  const std::int64_t first = g.first[comm.rank()] * g.row_bytes;
  const std::int64_t bytes = g.first[comm.rank() + 1] * g.row_bytes - first;
  if (g.send == nullptr || bytes == 0) return;
  using Dst = Kokkos::View<unsigned char*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  using Src = Kokkos::View<const unsigned char*, Memory, Kokkos::MemoryUnmanaged>;
  Kokkos::deep_copy(Dst(static_cast<unsigned char*>(recv) + first, bytes),
                    Src(static_cast<const unsigned char*>(g.send), bytes));
}

#if defined(TERNARYCOUNTER_HAVE_NCCL) && defined(KOKKOS_ENABLE_CUDA)
void nccl_check(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) {
    throw std::runtime_error(std::string("TernaryCounter::Distributed: ") + call + ": " +
                             ncclGetErrorString(r));
  }
}

void nccl_all_gather(const Communicator& comm, const Kokkos::Cuda& space,
                     const std::vector<RowGather>& gathers) {
  const auto nccl = static_cast<ncclComm_t>(comm.nccl());
  const int n = comm.size();
  nccl_check(ncclGroupStart(), "ncclGroupStart");
  for (const RowGather& g : gathers) {
    for (int r = 0; r < n; ++r) {
      const std::size_t bytes = std::size_t((g.first[r + 1] - g.first[r]) * g.row_bytes);
      if (bytes == 0) continue;  // every rank skips the same (empty) broadcasts
      auto* block = static_cast<unsigned char*>(g.recv) + g.first[r] * g.row_bytes;
      const void* send = (r == comm.rank() && g.send != nullptr) ? g.send : block;
      nccl_check(ncclBroadcast(send, block, bytes, ncclUint8, r, nccl, space.cuda_stream()),
                 "ncclBroadcast");
      // NCCL's ring broadcast: every rank but the root's predecessor forwards the block.
      if ((r + n - 1) % n != comm.rank()) comm.count_sent(std::int64_t(bytes));
    }
  }
  nccl_check(ncclGroupEnd(), "ncclGroupEnd");
}
#endif

}  // namespace

template <class ExecSpace>
void all_gather_rows(const Communicator& comm, const ExecSpace& space,
                     const std::vector<RowGather>& gathers) {
  using Memory = typename ExecSpace::memory_space;
  for (const RowGather& g : gathers) {
    if (std::int64_t(g.first.size()) != comm.size() + 1) {
      throw std::logic_error("TernaryCounter::Distributed: a gather without one block per rank");
    }
  }
#if defined(TERNARYCOUNTER_HAVE_NCCL) && defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda>) {
    if (comm.uses_nccl()) {
      nccl_all_gather(comm, space, gathers);
      return;
    }
  }
#endif
  space.fence("TernaryCounter::Distributed::all_gather_rows: before MPI");
  for (const RowGather& g : gathers) {
    const std::int64_t total = g.first.back() * g.row_bytes;
    if (total == 0) continue;
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Memory>::accessible) {
      place_own_rows<Memory>(comm, g, g.recv);
      ring_all_gather(comm, g.recv, g.row_bytes, g.first);
    } else {
      // Device memory without NCCL (or ranks sharing a GPU; MPI may not be CUDA-aware):
      // through the host.
      Kokkos::View<unsigned char*, Kokkos::HostSpace> staging(
          Kokkos::view_alloc("TernaryCounter::Distributed::staging", Kokkos::WithoutInitializing),
          total);
      using Device = Kokkos::View<unsigned char*, Memory, Kokkos::MemoryUnmanaged>;
      const Device recv(static_cast<unsigned char*>(g.recv), total);
      const std::int64_t first = g.first[comm.rank()] * g.row_bytes;
      const std::int64_t bytes = g.first[comm.rank() + 1] * g.row_bytes - first;
      const std::pair<std::int64_t, std::int64_t> mine(first, first + bytes);
      if (g.send != nullptr) {
        place_own_rows<Memory>(comm, g, staging.data());
      } else {
        Kokkos::deep_copy(Kokkos::subview(staging, mine), Kokkos::subview(recv, mine));
      }
      ring_all_gather(comm, staging.data(), g.row_bytes, g.first);
      Kokkos::deep_copy(recv, staging);
    }
  }
}

#define TERNARYCOUNTER_INSTANTIATE_ALL_GATHER(SPACE)                      \
  template void all_gather_rows<SPACE>(const Communicator&, const SPACE&, \
                                       const std::vector<RowGather>&);

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_ALL_GATHER)

}  // namespace TernaryCounter::Distributed::Impl
