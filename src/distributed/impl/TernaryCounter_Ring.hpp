// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The library's collectives on host buffers, as rings of point-to-point messages: each rank sends
// to the next rank and receives from the previous one, so the bytes a rank sends are known exactly
// and counted on the Communicator. Blocks are in rank order: rank r's block of a buffer is elements
// [first[r], first[r+1]); blocks may differ in size (and be empty).
#pragma once

#include "TernaryCounter_Communicator.hpp"

#include <cstdint>
#include <vector>

namespace TernaryCounter::Distributed::Impl {

/// In place: on return this rank's block of `data` holds the sum of every rank's block (int32:
/// exact in any order). The other blocks hold partial sums. Sends every block but its own.
void ring_reduce_scatter_sum(const Communicator& comm, std::int32_t* data,
                             const std::vector<std::int64_t>& first);

/// In place: every element of `data` [n] becomes the max over ranks (a max: exact in any order).
void ring_all_reduce_max(const Communicator& comm, std::uint32_t* data, std::int64_t n);

/// In place: rank r's rows [first[r], first[r+1]) of `row_bytes` bytes each reach every rank.
/// Sends every block but the next rank's.
void ring_all_gather(const Communicator& comm, void* data, std::int64_t row_bytes,
                     const std::vector<std::int64_t>& first);

}  // namespace TernaryCounter::Distributed::Impl
