// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "distributed/impl/TernaryCounter_Ring.hpp"

#include "TernaryCounter_Blocks.hpp"
#include "distributed/impl/TernaryCounter_MpiCheck.hpp"

#include <algorithm>
#include <stdexcept>

namespace TernaryCounter::Distributed::Impl {

namespace {

/// MPI counts are int: messages go in pieces of at most 1 GiB.
constexpr std::int64_t piece_bytes = std::int64_t(1) << 30;

/// Sends `send_bytes` to the next rank while receiving `recv_bytes` from the previous one, each
/// as ceil(bytes / piece_bytes) messages (none for 0 bytes): the previous rank's send size is
/// this rank's receive size, so both sides agree on the messages.
void shift(const Communicator& comm, const void* send, std::int64_t send_bytes, void* recv,
           std::int64_t recv_bytes) {
  const int n = comm.size(), next = (comm.rank() + 1) % n, previous = (comm.rank() + n - 1) % n;
  const auto* out = static_cast<const char*>(send);
  auto* in = static_cast<char*>(recv);
  std::vector<MPI_Request> requests;
  for (std::int64_t at = 0; at < recv_bytes; at += piece_bytes) {
    requests.emplace_back();
    mpi_check(MPI_Irecv(in + at, int(std::min(piece_bytes, recv_bytes - at)), MPI_BYTE, previous, 0,
                        comm.mpi(), &requests.back()),
              "MPI_Irecv");
  }
  for (std::int64_t at = 0; at < send_bytes; at += piece_bytes) {
    requests.emplace_back();
    mpi_check(MPI_Isend(out + at, int(std::min(piece_bytes, send_bytes - at)), MPI_BYTE, next, 0,
                        comm.mpi(), &requests.back()),
              "MPI_Isend");
  }
  mpi_check(MPI_Waitall(int(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  comm.count_sent(send_bytes);
}

void check_blocks(const Communicator& comm, const std::vector<std::int64_t>& first) {
  if (std::int64_t(first.size()) != comm.size() + 1) {
    throw std::logic_error(
        "TernaryCounter::Distributed: a ring collective without one block "
        "per rank");
  }
}

/// Ring reduce-scatter of `data`'s blocks with `join(into, from, count)`.
template <class T, class Join>
void ring_reduce_scatter(const Communicator& comm, T* data, const std::vector<std::int64_t>& first,
                         Join join) {
  check_blocks(comm, first);
  const int n = comm.size(), rank = comm.rank();
  if (n == 1) return;
  std::int64_t largest = 0;
  for (int r = 0; r < n; ++r) largest = std::max(largest, first[r + 1] - first[r]);
  std::vector<T> received(static_cast<std::size_t>(largest));
  // Step s sends block rank - s - 1 (summed over s + 1 ranks so far) and receives block
  // rank - s - 2; after n - 1 steps the block received last is this rank's, complete.
  for (int s = 0; s < n - 1; ++s) {
    const int send = ((rank - s - 1) % n + n) % n, recv = ((rank - s - 2) % n + n) % n;
    const std::int64_t count = first[recv + 1] - first[recv];
    shift(comm, data + first[send], (first[send + 1] - first[send]) * std::int64_t(sizeof(T)),
          received.data(), count * std::int64_t(sizeof(T)));
    join(data + first[recv], received.data(), count);
  }
}

}  // namespace

void ring_reduce_scatter_sum(const Communicator& comm, std::int32_t* data,
                             const std::vector<std::int64_t>& first) {
  ring_reduce_scatter(comm, data, first,
                      [](std::int32_t* into, const std::int32_t* from, std::int64_t count) {
                        for (std::int64_t k = 0; k < count; ++k) into[k] += from[k];
                      });
}

void ring_all_reduce_max(const Communicator& comm, std::uint32_t* data, std::int64_t n) {
  std::vector<std::int64_t> first(std::size_t(comm.size()) + 1);
  for (int r = 0; r < comm.size(); ++r) first[r] = block(n, r, comm.size()).first;
  first.back() = n;
  ring_reduce_scatter(comm, data, first,
                      [](std::uint32_t* into, const std::uint32_t* from, std::int64_t count) {
                        for (std::int64_t k = 0; k < count; ++k)
                          into[k] = std::max(into[k], from[k]);
                      });
  ring_all_gather(comm, data, sizeof(std::uint32_t), first);
}

void ring_all_gather(const Communicator& comm, void* data, std::int64_t row_bytes,
                     const std::vector<std::int64_t>& first) {
  check_blocks(comm, first);
  const int n = comm.size(), rank = comm.rank();
  auto* bytes = static_cast<char*>(data);
  // Step s forwards block rank - s (this rank's own at s = 0) and receives block rank - s - 1.
  for (int s = 0; s < n - 1; ++s) {
    const int send = ((rank - s) % n + n) % n, recv = ((rank - s - 1) % n + n) % n;
    shift(comm, bytes + first[send] * row_bytes, (first[send + 1] - first[send]) * row_bytes,
          bytes + first[recv] * row_bytes, (first[recv + 1] - first[recv]) * row_bytes);
  }
}

}  // namespace TernaryCounter::Distributed::Impl
