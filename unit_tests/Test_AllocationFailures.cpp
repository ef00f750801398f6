// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Allocation failures while reading a checkpoint surface as CheckpointError, never as an escaping
// std::bad_alloc: every heap allocation parse_checkpoint makes on this thread is failed once, in
// turn, through a replaced operator new. Its own executable, because the replacement is global.
#include <TernaryCounter.hpp>

#include "Test_HeaderOfKeys.hpp"

#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace {

// -1: no failure armed; n >= 0: the (n+1)-th allocation from now on this thread fails.
thread_local long allocations_until_failure = -1;
thread_local bool failure_injected = false;
// Bytes allocated through operator new and not yet freed on this thread, and their maximum.
thread_local long long live_bytes = 0;
thread_local long long peak_bytes = 0;

}  // namespace

void* operator new(std::size_t bytes) {
  if (allocations_until_failure >= 0 && allocations_until_failure-- == 0) {
    failure_injected = true;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(bytes ? bytes : 1)) {
    live_bytes += static_cast<long long>(malloc_usable_size(p));
    peak_bytes = std::max(peak_bytes, live_bytes);
    return p;
  }
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  if (p) live_bytes -= static_cast<long long>(malloc_usable_size(p));
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  operator delete(p);
}

namespace {

TernaryCounter::PackedState<Kokkos::HostSpace> sample_state(std::int64_t out, std::int64_t in) {
  TernaryCounter::PackedState<Kokkos::HostSpace> s("sample", out, in, 8);
  for (std::int64_t o = 0; o < out; ++o) {
    s.scale(o) = 0.5f + float(o);
    s.v(o) = 1e-3f * float(o);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  TernaryCounter::Checkpoint c;
  c.step = 7;
  c.metadata["note"] = "a note long enough not to fit in a short string buffer";
  c.layers.push_back({"fc1", sample_state(3, 8)});
  c.layers.push_back({"fc2", sample_state(2, 4)});
  const std::string image = TernaryCounter::serialize_checkpoint(c);
  const std::string source = "image";

  int failures = 0;
  long n = 0;
  for (;; ++n) {
    failure_injected = false;
    allocations_until_failure = n;
    std::string outcome;
    try {
      const TernaryCounter::Checkpoint back = TernaryCounter::parse_checkpoint(image, source);
      allocations_until_failure = -1;
      // An allocation failure that was absorbed (a fallback) must not change the result.
      if (back.step != 7 || back.layers.size() != 2 || back.metadata != c.metadata) {
        outcome = "accepted with a different result";
      }
    } catch (const TernaryCounter::CheckpointError& e) {
      allocations_until_failure = -1;
      if (!failure_injected) outcome = std::string("rejected without a failure: ") + e.what();
    } catch (const std::bad_alloc&) {
      allocations_until_failure = -1;
      outcome = "std::bad_alloc escaped";
    } catch (const std::exception& e) {
      allocations_until_failure = -1;
      outcome = std::string("unexpected exception: ") + e.what();
    }
    if (!outcome.empty()) {
      std::printf("allocation %ld failed: %s\n", n + 1, outcome.c_str());
      ++failures;
    }
    if (!failure_injected) break;  // the parse made fewer than n + 1 allocations: all tried
  }
  std::printf("%ld allocations of parse_checkpoint failed in turn, %d bad outcome(s)\n", n,
              failures);

  // What refusing a hostile header allocates is bounded by the header limits, not by its size:
  // headers of 2 Mi and 8 Mi keys (24 and 96 MiB, 8x and 32x the value limit) are refused at the
  // same value, having allocated the same.
  const auto peak_refusing = [&](std::size_t keys) -> long long {
    const std::string header = TernaryCounter::Test::metadata_header_with_keys(keys);
    std::string hostile(8, '\0');
    for (int b = 0; b < 8; ++b) hostile[b] = char((header.size() >> (8 * b)) & 0xFF);
    hostile += header;
    const long long before = live_bytes;
    peak_bytes = live_bytes;
    bool refused = false;
    try {
      TernaryCounter::parse_checkpoint(hostile, source);
    } catch (const TernaryCounter::CheckpointError&) {
      refused = true;
    }
    const long long peak = peak_bytes - before;
    std::printf("a %zu-byte header of too many keys: %s, at most %lld bytes allocated at once\n",
                header.size(), refused ? "refused" : "NOT refused", peak);
    return refused ? peak : -1;
  };
  const long long small = peak_refusing(std::size_t(2) << 20);
  const long long large = peak_refusing(std::size_t(8) << 20);
  const long long budget = 64ll << 20;  // the tree at the 2^18-value limit and one regrowth
  if (small < 0 || large < 0 || large > small + (64 << 10) || large > budget) {
    std::printf("bad: the allocation grows with the header or exceeds %lld bytes\n", budget);
    ++failures;
  }
  return failures == 0 && n > 10 ? 0 : 1;
}
