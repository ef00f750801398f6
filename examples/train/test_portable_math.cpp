// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// TernaryCounter_PortableMath.hpp: exp and log within a few ulp of the double-precision functions,
// and the default execution space (a GPU in a CUDA build) computes exactly the host's bits.
#include <TernaryCounter_PortableMath.hpp>

#include <Kokkos_Core.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

constexpr int samples = 200001;

// x_i for exp: [-110, 90] (under- and overflow included); for log: [1e-3, 1e6] geometrically.
KOKKOS_INLINE_FUNCTION float exp_argument(int i) {
  return -110.0f + 200.0f * float(i) / float(samples - 1);
}
KOKKOS_INLINE_FUNCTION float log_argument(int i) {
  return 1e-3f * TernaryCounter::portable_exp(20.7232658f * float(i) / float(samples - 1));
}

std::uint32_t bits(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  using namespace TernaryCounter;
  Kokkos::View<float* [2]> device("PortableMath::device", samples);
  Kokkos::parallel_for(
      "PortableMath::evaluate", samples, KOKKOS_LAMBDA(int i) {
        device(i, 0) = portable_exp(exp_argument(i));
        device(i, 1) = portable_log(log_argument(i));
      });
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), device);
  int failures = 0;
  double worst_exp = 0, worst_log = 0;
  for (int i = 0; i < samples; ++i) {
    const float e = portable_exp(exp_argument(i)), l = portable_log(log_argument(i));
    if (bits(e) != bits(host(i, 0)) || bits(l) != bits(host(i, 1))) {
      if (++failures <= 5) std::printf("bits differ at sample %d\n", i);
    }
    const double x = exp_argument(i), exact = std::exp(x);
    // Relative error where the result is a normal float; absolute in units of the smallest
    // normal below (subnormal results carry fewer bits).
    const double err = exact >= FLT_MAX  ? (std::isinf(e) ? 0.0 : 1.0)
                       : exact > FLT_MIN ? std::fabs(e - exact) / exact
                                         : std::fabs(e - exact) / FLT_MIN;
    if (err > worst_exp) worst_exp = err;
    const double y = log_argument(i), exact_log = std::log(y);
    const double err_log = std::fabs(l - exact_log) / std::fmax(std::fabs(exact_log), 1.0);
    if (err_log > worst_log) worst_log = err_log;
  }
  std::printf("portable exp: worst relative error %.3g; portable log: %.3g; %s: %d of %d differ\n",
              worst_exp, worst_log, Kokkos::DefaultExecutionSpace::name(), failures, samples);
  // 4 float ulp (2^-21): the results must be usable as exp and log, not only deterministic.
  const bool ok = failures == 0 && worst_exp < 4.8e-7 && worst_log < 4.8e-7;
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
