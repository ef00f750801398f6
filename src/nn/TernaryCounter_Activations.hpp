// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ReLU and its backward for the hidden layers of an MLP: element-wise, one thread per element, so
// they give the same bits on every backend and thread count.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace TernaryCounter {

namespace Impl {

template <class ExecSpace>
Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>> matrix_policy(const ExecSpace& space,
                                                                std::int64_t rows,
                                                                std::int64_t cols) {
  using Policy = Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>;
  using Point = typename Policy::point_type;
  return Policy(space, Point{0, 0}, Point{rows, cols});
}

template <class A, class B>
void require_same_extents(const char* call, const A& a, const B& b) {
  if (a.extent(0) != b.extent(0) || a.extent(1) != b.extent(1)) {
    throw std::invalid_argument(std::string("TernaryCounter::") + call + ": " + a.label() + " is " +
                                std::to_string(a.extent(0)) + "x" + std::to_string(a.extent(1)) +
                                " but " + b.label() + " is " + std::to_string(b.extent(0)) + "x" +
                                std::to_string(b.extent(1)));
  }
}

}  // namespace Impl

/// out [M, N] = max(in [M, N], 0) (in and out may be the same View; NaN gives 0). Enqueued on
/// `space` without a fence. Throws std::invalid_argument when the extents differ.
template <class ExecSpace>
void relu(
    const ExecSpace& space,
    const Kokkos::View<const float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& in,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& out) {
  Impl::require_same_extents("relu", in, out);
  Kokkos::parallel_for(
      "TernaryCounter::relu", Impl::matrix_policy(space, in.extent(0), in.extent(1)),
      KOKKOS_LAMBDA(std::int64_t m, std::int64_t j) {
        out(m, j) = in(m, j) > 0.0f ? in(m, j) : 0.0f;
      });
}

/// grad [M, N] *= (pre [M, N] > 0): the gradient with respect to relu(pre) becomes the gradient
/// with respect to pre. Enqueued on `space` without a fence. Throws std::invalid_argument when
/// the extents differ.
template <class ExecSpace>
void relu_backward(
    const ExecSpace& space,
    const Kokkos::View<const float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& pre,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& grad) {
  Impl::require_same_extents("relu_backward", pre, grad);
  Kokkos::parallel_for(
      "TernaryCounter::relu_backward", Impl::matrix_policy(space, pre.extent(0), pre.extent(1)),
      KOKKOS_LAMBDA(std::int64_t m, std::int64_t j) {
        if (!(pre(m, j) > 0.0f)) grad(m, j) = 0.0f;
      });
}

}  // namespace TernaryCounter
