// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The FP32 baseline of the image task: the same MLP (widths, ReLU, no biases, the same initial
// weights W = scale * t as the ternary model's) with float weights trained by Adam, its three
// products per layer through KokkosBlas::gemm (the vendor BLAS of the execution space). Its
// training state is 12 bytes per weight (W, Adam's m and v) plus the 4-byte gradient buffer this
// implementation keeps. Its bits depend on the BLAS and its thread count (no fixed order).
#pragma once

#include "AdamParams.hpp"
#include "MlpInit.hpp"
#include "MlpKernels.hpp"

#include <KokkosBlas3_gemm.hpp>
#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace TernaryCounter::Train {

template <class ExecSpace>
class Fp32Mlp {
 public:
  using Mem = typename ExecSpace::memory_space;
  using Mat = Matrix<Mem>;

  /// Initial weights equal to those of TernaryMlp(widths, C, seed) (see MlpInit.hpp).
  Fp32Mlp(const ExecSpace& space, const std::vector<std::int64_t>& widths, int C,
          std::uint32_t seed, const AdamParams& adam, std::int64_t max_rows)
      : space_(space), adam_(adam), lr_(adam.lr) {
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
      const std::int64_t out = widths[l + 1], in = widths[l];
      const std::vector<float> w = initial_float_weights(out, in, C, seed, l);
      Layer layer{alloc("w", out, in), Mat("ternary-counter-train::adam_m", out, in),
                  Mat("ternary-counter-train::adam_v", out, in), alloc("grad_w", out, in)};
      Kokkos::deep_copy(
          space_, layer.w,
          Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace>(w.data(), out, in));
      layers_.push_back(layer);
      pre_.push_back(alloc("pre", max_rows, out));
      grad_.push_back(alloc("grad", max_rows, out));
      act_.push_back(alloc("act", l == 0 ? 0 : max_rows, in));
    }
    space_.fence();  // the host copies of w are freed on return
  }

  std::string name() const { return "fp32-adam"; }

  void set_schedule(double factor, bool) { lr_ = adam_.lr * factor; }

  /// As TernaryMlp::train_step, with one Adam step per layer (one process: x is the batch).
  void train_step(const Mat& x, const Kokkos::View<std::int32_t*, Mem>& labels,
                  const Kokkos::View<float*, Mem>& losses,
                  const Kokkos::View<std::int32_t*, Mem>& correct, std::int64_t offset,
                  std::int64_t batch) {
    const std::int64_t M = x.extent(0);
    const Mat logits = forward(x);
    const std::size_t L = layers_.size();
    softmax_cross_entropy(space_, logits, labels, losses, correct, offset, rows(grad_[L - 1], M),
                          1.0f / float(batch));
    ++step_;
    for (std::size_t l = L; l-- > 0;) {
      const Mat grad = rows(grad_[l], M);
      const Mat input = l == 0 ? x : rows(act_[l], M);
      // grad_w [out, in] = grad^T [out, M] input [M, in]
      KokkosBlas::gemm(space_, "T", "N", 1.0f, grad, input, 0.0f, layers_[l].grad_w);
      if (l > 0) {
        const Mat grad_below = rows(grad_[l - 1], M);
        // grad_below [M, in] = grad [M, out] W [out, in], with W before this step's update
        KokkosBlas::gemm(space_, "N", "N", 1.0f, grad, layers_[l].w, 0.0f, grad_below);
        relu_backward(space_, rows(pre_[l - 1], M), grad_below);
      }
      adam_update(layers_[l]);
    }
  }

  void evaluate(const Mat& x, const Kokkos::View<std::int32_t*, Mem>& labels,
                const Kokkos::View<float*, Mem>& losses,
                const Kokkos::View<std::int32_t*, Mem>& correct, std::int64_t offset) {
    softmax_cross_entropy(space_, forward(x), labels, losses, correct, offset, Mat(), 1.0f);
  }

  std::int64_t step() const { return step_; }

  // Public only because CUDA forbids extended lambdas in private member functions.
  struct Layer {
    Mat w, m, v, grad_w;
  };
  void adam_update(const Layer& layer) const {
    const float b1 = float(adam_.beta1), b2 = float(adam_.beta2);
    // Bias corrections folded into the step size (Kingma & Ba, section 2).
    const double t = double(step_);
    const float lr_t =
        float(lr_ * std::sqrt(1.0 - std::pow(adam_.beta2, t)) / (1.0 - std::pow(adam_.beta1, t)));
    const float eps_t = float(adam_.eps * std::sqrt(1.0 - std::pow(adam_.beta2, t)));
    const Mat w = layer.w, m = layer.m, v = layer.v, g = layer.grad_w;
    Kokkos::parallel_for(
        "ternary-counter-train::adam", range2(space_, w.extent(0), w.extent(1)),
        KOKKOS_LAMBDA(std::int64_t o, std::int64_t i) {
          const float gi = g(o, i);
          const float mi = b1 * m(o, i) + (1.0f - b1) * gi;
          const float vi = b2 * v(o, i) + (1.0f - b2) * gi * gi;
          m(o, i) = mi;
          v(o, i) = vi;
          w(o, i) -= lr_t * mi / (Kokkos::sqrt(vi) + eps_t);
        });
  }

 private:
  static Mat alloc(const std::string& what, std::int64_t rows, std::int64_t cols) {
    return Mat(Kokkos::view_alloc("ternary-counter-train::" + what, Kokkos::WithoutInitializing),
               rows, cols);
  }
  static Mat rows(const Mat& m, std::int64_t count) {
    return Kokkos::subview(m, std::pair<std::int64_t, std::int64_t>(0, count), Kokkos::ALL);
  }

  Mat forward(const Mat& x) {
    const std::int64_t M = x.extent(0);
    Mat input = x;
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const Mat pre = rows(pre_[l], M);
      // pre [M, out] = input [M, in] W^T
      KokkosBlas::gemm(space_, "N", "T", 1.0f, input, layers_[l].w, 0.0f, pre);
      if (l + 1 < layers_.size()) {
        input = rows(act_[l + 1], M);
        relu(space_, pre, input);
      }
    }
    return rows(pre_.back(), M);
  }

  ExecSpace space_;
  AdamParams adam_;
  double lr_;
  std::int64_t step_ = 0;
  std::vector<Layer> layers_;
  std::vector<Mat> pre_, grad_, act_;
};

}  // namespace TernaryCounter::Train
