// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A minimal application of TernaryCounter: updates of a 16x32 layer from IO, one with a row
// whose gradient is not finite.
// Built by the two consumer projects beside this file (CI checks both ways of linking).
#include <TernaryCounter.hpp>

#include <cstdio>
#include <limits>

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  using Mem = Kokkos::DefaultExecutionSpace::memory_space;
  const int out = 16, in = 32, M = 8;
  TernaryCounter::PackedState<Mem> state("layer", out, in, /*C=*/8);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> x("x", M, in), grad_out("grad_out", M, out);
  Kokkos::deep_copy(x, 1.0f);
  Kokkos::deep_copy(grad_out, 0.5f);
  TernaryCounter::UpdateParams params;
  params.C = 8;
  params.lr = 0.05;
  params.lr_scale = 2e-4;
  params.rms_beta = 0.9;
  params.seed = 1;
  const auto report = TernaryCounter::update_from_io(state, x, grad_out, params);
  const auto host =
      TernaryCounter::create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, state);
  std::printf("skipped=%lld v[0]=%g scale[0]=%g\n", (long long)report.skipped_rows, host.v(0),
              host.scale(0));
  // Every row saw the same finite gradient: nothing skipped and the RMS moment moved.
  if (report.skipped_rows != 0 || !(host.v(0) > 0.0f)) return 1;

  // An infinite output gradient makes row 3's gradient infinite: that row alone is skipped and
  // left as it was, even when the application is compiled with -ffast-math (CI builds it so).
  Kokkos::deep_copy(Kokkos::subview(grad_out, 0, 3), std::numeric_limits<float>::infinity());
  params.seed = 2;
  const auto second = TernaryCounter::update_from_io(state, x, grad_out, params);
  const auto after =
      TernaryCounter::create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, state);
  std::printf("skipped=%lld v[3]=%g (was %g)\n", (long long)second.skipped_rows, after.v(3),
              host.v(3));
  return second.skipped_rows == 1 && after.v(3) == host.v(3) && after.v(0) != host.v(0) ? 0 : 1;
}
