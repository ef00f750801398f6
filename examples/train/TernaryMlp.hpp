// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The ternary MLP of the image task: widths[0] -> widths[1] -> ... -> widths.back(), ReLU
// between layers, no biases, every layer a TernaryLinear (0.75 byte per weight + 2 floats per
// row of training state). One step: forward -> softmax cross-entropy -> for each layer from the
// last: backward_input (not for the first layer: the images need no gradient) and
// update_from_io. All products are the library's, bit-identical on every backend. Data parallel
// under MPI (DataParallel.hpp): each rank steps on its block of the batch and the
// collective update leaves every rank with the state one process would have.
#pragma once

#include "MlpInit.hpp"
#include "MlpKernels.hpp"

#include <DataParallel.hpp>
#include <TernaryCounter.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace TernaryCounter::Train {

template <class ExecSpace>
class TernaryMlp {
 public:
  using Mem = typename ExecSpace::memory_space;
  using Mat = Matrix<Mem>;

  /// widths: layer widths from the input to the classes (every one but the last a multiple of
  /// 4); params: the update recipe at the schedule's start; precision: the layers' arithmetic;
  /// max_rows: the largest batch.
  TernaryMlp(const Examples::Processes& processes, const ExecSpace& space,
             const std::vector<std::int64_t>& widths, const UpdateParams& params,
             Precision precision, std::uint32_t seed, std::int64_t max_rows)
      : processes_(processes), space_(space), base_(params) {
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
      layers_.push_back(std::make_unique<Examples::Layer<ExecSpace>>(
          processes, space, layer_name(l), widths[l + 1], widths[l], params, rounding_seed(seed, l),
          precision));
      randomize_ternary(layers_.back()->state(), init_seed(seed, l), init_scale(widths[l]));
      pre_.push_back(alloc("pre", max_rows, widths[l + 1]));
      grad_.push_back(alloc("grad", max_rows, widths[l + 1]));
      act_.push_back(alloc("act", l == 0 ? 0 : max_rows, widths[l]));
    }
  }

  std::string name() const { return "ternary"; }

  /// Multiplies the base learning rates by `factor` from the next step on (the schedule).
  void set_schedule(double factor, bool scale_too) {
    for (auto& layer : layers_) {
      layer->set_lr(base_.lr * factor);
      if (scale_too) layer->set_lr_scale(base_.lr_scale * factor);
    }
  }

  /// One training step (collective) on a batch of `batch` samples, of which x [M, widths[0]]
  /// with labels [M] are this rank's block; writes each of them's loss and whether it was
  /// classified right (before the update) to losses / correct at `offset`.
  void train_step(const Mat& x, const Kokkos::View<std::int32_t*, Mem>& labels,
                  const Kokkos::View<float*, Mem>& losses,
                  const Kokkos::View<std::int32_t*, Mem>& correct, std::int64_t offset,
                  std::int64_t batch) {
    const std::int64_t M = x.extent(0);
    const Mat logits = forward(x);
    const std::size_t L = layers_.size();
    // The gradient of the mean loss over the whole batch: a sample's row is the same on any rank.
    softmax_cross_entropy(space_, logits, labels, losses, correct, offset, rows(grad_[L - 1], M),
                          1.0f / float(batch));
    for (std::size_t l = L; l-- > 0;) {
      const Mat grad = rows(grad_[l], M);
      const Mat input = l == 0 ? x : rows(act_[l], M);
      if (l > 0) {
        const Mat grad_below = rows(grad_[l - 1], M);
        layers_[l]->backward_input(grad, grad_below);
        relu_backward(space_, rows(pre_[l - 1], M), grad_below);
      }
      layers_[l]->update_from_io(input, grad);
    }
  }

  /// Losses and hits of x [M, widths[0]] (no update), written at `offset`.
  void evaluate(const Mat& x, const Kokkos::View<std::int32_t*, Mem>& labels,
                const Kokkos::View<float*, Mem>& losses,
                const Kokkos::View<std::int32_t*, Mem>& correct, std::int64_t offset) {
    softmax_cross_entropy(space_, forward(x), labels, losses, correct, offset, Mat(), 1.0f);
  }

  std::int64_t step() const { return layers_.front()->step(); }
  std::int64_t weights() const {
    std::int64_t n = 0;
    for (const auto& layer : layers_) n += layer->state().out() * layer->state().in();
    return n;
  }
  /// Training state per weight: 0.75 byte of codes plus scale and v (2 floats) per row.
  double state_bytes_per_weight() const {
    double bytes = 0;
    for (const auto& layer : layers_) {
      bytes += 0.75 * double(layer->state().out() * layer->state().in()) +
               8.0 * double(layer->state().out());
    }
    return bytes / double(weights());
  }

  void save(const std::string& path, const std::map<std::string, std::string>& metadata) const {
    Examples::save_layers<Mem>(processes_, path, named_states(), step(), metadata);
  }
  /// Loads every layer and the step count from checkpoint `c`, read from `source` (collective).
  void load(const Checkpoint& c, const std::string& source) {
    Examples::copy_layers<Mem>(processes_, c, source, named_states());
    for (auto& layer : layers_) layer->set_step(c.step);
  }

 private:
  static Mat alloc(const std::string& what, std::int64_t rows, std::int64_t cols) {
    return Mat(Kokkos::view_alloc("ternary-counter-train::" + what, Kokkos::WithoutInitializing),
               rows, cols);
  }
  static Mat rows(const Mat& m, std::int64_t count) {
    return Kokkos::subview(m, std::pair<std::int64_t, std::int64_t>(0, count), Kokkos::ALL);
  }

  // Fills pre_ and act_ for x's rows; returns the logits (the last pre-activations).
  Mat forward(const Mat& x) {
    const std::int64_t M = x.extent(0);
    Mat input = x;
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const Mat pre = rows(pre_[l], M);
      layers_[l]->forward(input, pre);
      if (l + 1 < layers_.size()) {
        input = rows(act_[l + 1], M);
        relu(space_, pre, input);
      }
    }
    return rows(pre_.back(), M);
  }

  std::vector<std::pair<std::string, PackedState<Mem>>> named_states() const {
    std::vector<std::pair<std::string, PackedState<Mem>>> states;
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      states.emplace_back(layer_name(l), layers_[l]->state());
    }
    return states;
  }

  const Examples::Processes& processes_;
  ExecSpace space_;
  UpdateParams base_;
  std::vector<std::unique_ptr<Examples::Layer<ExecSpace>>> layers_;
  std::vector<Mat> pre_, grad_, act_;  // per layer: its output, its output's gradient, its input
};

}  // namespace TernaryCounter::Train
