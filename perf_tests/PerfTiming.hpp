// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Timing of one benchmarked call: a warm-up, then repeats with a fence before and after each,
// the per-repeat preparation (e.g. restoring the state) outside the timed region.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <vector>

namespace TernaryCounter::Perf {

struct Samples {
  std::vector<double> ms;  ///< one wall time per repeat, in milliseconds, in run order

  double median() const {
    std::vector<double> s = ms;
    std::sort(s.begin(), s.end());
    const std::size_t n = s.size();
    if (n == 0) return 0.0;
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  }
  double min() const { return ms.empty() ? 0.0 : *std::min_element(ms.begin(), ms.end()); }
};

/// Runs prepare(); body() once untimed, then `repeats` times times body() alone.
template <class Prepare, class Body>
Samples time_repeats(int repeats, Prepare&& prepare, Body&& body) {
  prepare();
  body();
  Kokkos::fence("TernaryCounter::Perf::after_warm_up");
  Samples samples;
  for (int r = 0; r < repeats; ++r) {
    prepare();
    Kokkos::fence("TernaryCounter::Perf::before_timed");
    Kokkos::Timer timer;
    body();
    Kokkos::fence("TernaryCounter::Perf::after_timed");
    samples.ms.push_back(timer.seconds() * 1e3);
  }
  return samples;
}

}  // namespace TernaryCounter::Perf
