// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The element-wise and per-sample kernels of an MLP step, shared by the ternary model and the
// FP32 baseline (and the teacher job's softmax cross-entropy): batch gathering, ReLU and its
// backward, softmax cross-entropy. Each output element is computed by one thread in a fixed order
// with portable exp/log, so they give the same bits on every backend and thread count.
#pragma once

#include "PortableMath.hpp"

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

template <class ExecSpace, class Mem = typename ExecSpace::memory_space>
void relu(const ExecSpace& space, const Matrix<Mem>& in, const Matrix<Mem>& out) {
  Kokkos::parallel_for(
      "ternary-counter-train::relu", range2(space, in.extent(0), in.extent(1)),
      KOKKOS_LAMBDA(std::int64_t m, std::int64_t j) {
        out(m, j) = in(m, j) > 0.0f ? in(m, j) : 0.0f;
      });
}

/// grad *= (pre > 0): the gradient of the activations becomes that of the pre-activations.
template <class ExecSpace, class Mem = typename ExecSpace::memory_space>
void relu_backward(const ExecSpace& space, const Matrix<Mem>& pre, const Matrix<Mem>& grad) {
  Kokkos::parallel_for(
      "ternary-counter-train::relu_backward", range2(space, pre.extent(0), pre.extent(1)),
      KOKKOS_LAMBDA(std::int64_t m, std::int64_t j) {
        if (!(pre(m, j) > 0.0f)) grad(m, j) = 0.0f;
      });
}

/// Per sample m: losses(offset + m) = log(sum exp(z - max)) - (z_label - max), correct(offset +
/// m) = (the first largest logit is the label's), and, when grad has rows,
/// grad(m, k) = (softmax_k - onehot_k) * grad_scale.
template <class ExecSpace, class Mem = typename ExecSpace::memory_space>
void softmax_cross_entropy(const ExecSpace& space, const Matrix<Mem>& logits,
                           const Kokkos::View<std::int32_t*, Mem>& labels,
                           const Kokkos::View<float*, Mem>& losses,
                           const Kokkos::View<std::int32_t*, Mem>& correct, std::int64_t offset,
                           const Matrix<Mem>& grad, float grad_scale) {
  const int K = int(logits.extent(1));
  const bool with_grad = grad.extent(0) != 0;
  Kokkos::parallel_for(
      "ternary-counter-train::softmax_cross_entropy",
      Kokkos::RangePolicy<ExecSpace>(space, 0, logits.extent(0)), KOKKOS_LAMBDA(std::int64_t m) {
        float top = logits(m, 0);
        int best = 0;
        for (int k = 1; k < K; ++k) {
          if (logits(m, k) > top) top = logits(m, k), best = k;
        }
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) sum += portable_exp(logits(m, k) - top);
        const int y = labels(m);
        losses(offset + m) = portable_log(sum) - (logits(m, y) - top);
        correct(offset + m) = best == y ? 1 : 0;
        if (with_grad) {
          for (int k = 0; k < K; ++k) {
            const float p = portable_exp(logits(m, k) - top) / sum;
            grad(m, k) = (p - (k == y ? 1.0f : 0.0f)) * grad_scale;
          }
        }
      });
}

}  // namespace TernaryCounter::Train
