// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Softmax cross-entropy of a classifier's logits: per-sample losses, hits and the gradient that
// starts the backward pass. One thread per sample, the classes in ascending order, exp and log
// from TernaryCounter_PortableMath.hpp: the same bits on every backend and thread count, so the
// gradient that feeds the counters (and so the trained codes) does not depend on the backend.
#pragma once

#include "TernaryCounter_PortableMath.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <sstream>
#include <stdexcept>

namespace TernaryCounter {

/// For each sample m of logits [M, K] with label labels(m) in [0, K):
///   losses(offset + m)  = log(sum_k exp(z_k - max)) - (z_label - max)
///   correct(offset + m) = 1 when the first largest logit is the label's, else 0
///   grad(m, k)          = (softmax_k - onehot_k) * grad_scale, when grad has rows (pass an
///                         empty View to skip it; grad_scale = 1 / batch gives the gradient of
///                         the batch's mean loss).
/// losses and correct need offset + M entries (a buffer for a whole epoch, filled batch by batch).
/// Labels are not checked on the device: one outside [0, K) reads out of bounds. Enqueued on
/// `space` without a fence. Throws std::invalid_argument for mismatched extents or K = 0.
template <class ExecSpace>
void softmax_cross_entropy(
    const ExecSpace& space,
    const Kokkos::View<const float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>&
        logits,
    const Kokkos::View<const std::int32_t*, typename ExecSpace::memory_space>& labels,
    const Kokkos::View<float*, typename ExecSpace::memory_space>& losses,
    const Kokkos::View<std::int32_t*, typename ExecSpace::memory_space>& correct,
    std::int64_t offset,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& grad,
    float grad_scale) {
  const std::int64_t M = logits.extent(0);
  const int K = int(logits.extent(1));
  const bool with_grad = grad.extent(0) != 0;
  if (K == 0 || std::int64_t(labels.extent(0)) < M || offset < 0 ||
      std::int64_t(losses.extent(0)) < offset + M || std::int64_t(correct.extent(0)) < offset + M ||
      (with_grad && (grad.extent(0) != logits.extent(0) || grad.extent(1) != logits.extent(1)))) {
    std::ostringstream msg;
    msg << "TernaryCounter::softmax_cross_entropy: logits are " << M << "x" << K << ", labels "
        << labels.extent(0) << ", losses " << losses.extent(0) << " and correct "
        << correct.extent(0) << " at offset " << offset << ", grad " << grad.extent(0) << "x"
        << grad.extent(1) << ": need K >= 1, M labels, offset + M losses and hits, and grad empty "
        << "or the logits' shape";
    throw std::invalid_argument(msg.str());
  }
  Kokkos::parallel_for(
      "TernaryCounter::softmax_cross_entropy", Kokkos::RangePolicy<ExecSpace>(space, 0, M),
      KOKKOS_LAMBDA(std::int64_t m) {
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

}  // namespace TernaryCounter
