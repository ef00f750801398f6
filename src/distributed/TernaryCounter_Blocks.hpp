// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// How a data-parallel run splits things among ranks: contiguous blocks in rank order, as even as
// possible. Samples of a global batch and output rows of a layer are both split this way, so
// rank order is the global order.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace TernaryCounter::Distributed {

struct Block {
  std::int64_t first = 0, last = 0;  ///< [first, last)
  std::int64_t size() const { return last - first; }
};

/// Rank `rank`'s block of n items among `size` ranks: [n*rank/size, n*(rank+1)/size).
inline Block block(std::int64_t n, int rank, int size) {
  if (n < 0 || size < 1 || rank < 0 || rank >= size) {
    throw std::invalid_argument("TernaryCounter::Distributed::block: n = " + std::to_string(n) +
                                ", rank = " + std::to_string(rank) +
                                ", size = " + std::to_string(size) + " is not a split");
  }
  // n * rank fits: n is an element count (< 2^62 here) and rank < 2^31 would overflow only for
  // absurd n; split the product to stay exact anyway.
  const auto at = [&](std::int64_t r) { return (n / size) * r + (n % size) * r / size; };
  return {at(rank), at(rank + 1)};
}

}  // namespace TernaryCounter::Distributed
