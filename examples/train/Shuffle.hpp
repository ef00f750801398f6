// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The order in which an epoch visits the training samples: a Fisher-Yates shuffle driven by the
// library's hash of (seed, epoch, position), on the host, so the order depends on the seed and
// the epoch only (not on the backend, the thread count or where a run was resumed).
#pragma once

#include <TernaryCounter_Hash.hpp>

#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

namespace TernaryCounter::Train {

inline std::vector<std::int32_t> epoch_order(std::int64_t count, std::uint32_t seed,
                                             std::int64_t epoch) {
  std::vector<std::int32_t> order(std::size_t(count), 0);
  std::iota(order.begin(), order.end(), 0);
  const std::uint32_t stream = hash_u32(seed ^ hash_u32(std::uint32_t(epoch) + 0x5bd1e995u));
  for (std::int64_t i = count - 1; i > 0; --i) {
    // A uniform j in [0, i] from 32 hash bits (multiply-shift; the bias is below 2^-15).
    const std::uint32_t h = hash_u32(stream ^ hash_u32(std::uint32_t(i)));
    const std::int64_t j = std::int64_t((std::uint64_t(h) * std::uint64_t(i + 1)) >> 32);
    std::swap(order[i], order[j]);
  }
  return order;
}

}  // namespace TernaryCounter::Train
