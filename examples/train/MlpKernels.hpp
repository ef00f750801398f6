// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The kernels of an MLP step that the ternary model and the FP32 baseline share: batch gathering
// here, ReLU and softmax cross-entropy from the library (TernaryCounter_Activations.hpp,
// TernaryCounter_Loss.hpp). Each output element is computed by one thread in a fixed order, so
// they give the same bits on every backend and thread count.
#pragma once

#include <TernaryCounter_Activations.hpp>
#include <TernaryCounter_Loss.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Train {

template <class Mem>
using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, Mem>;

template <class ExecSpace>
Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>> range2(const ExecSpace& space, std::int64_t rows,
                                                         std::int64_t cols) {
  using Policy = Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>;
  using Point = typename Policy::point_type;
  return Policy(space, Point{0, 0}, Point{rows, cols});
}

/// Row m of x and labels(m) = sample order(first + m) of `images` / `all_labels`, m < x rows.
template <class ExecSpace, class Mem = typename ExecSpace::memory_space>
void gather_batch(const ExecSpace& space, const Matrix<Mem>& images,
                  const Kokkos::View<std::int32_t*, Mem>& all_labels,
                  const Kokkos::View<std::int32_t*, Mem>& order, std::int64_t first,
                  const Matrix<Mem>& x, const Kokkos::View<std::int32_t*, Mem>& labels) {
  Kokkos::parallel_for(
      "ternary-counter-train::gather_batch", range2(space, x.extent(0), x.extent(1)),
      KOKKOS_LAMBDA(std::int64_t m, std::int64_t i) {
        const std::int32_t n = order(first + m);
        x(m, i) = images(n, i);
        if (i == 0) labels(m) = all_labels(n);
      });
}

}  // namespace TernaryCounter::Train
