// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The image task's training loop: the data on the device, one shuffled pass over the training
// images per epoch with a cosine learning-rate schedule, the test set evaluated after each epoch,
// per-epoch checkpoints and the printed lines. Per-sample losses and hits are written to device
// arrays and summed on the host in sample order, so the lines do not depend on the backend, the
// thread count or the number of MPI ranks (each rank steps on its block of every batch).
#pragma once

#include "FashionMnist.hpp"
#include "ImageOptions.hpp"
#include "MlpKernels.hpp"
#include "Shuffle.hpp"
#include "Standardize.hpp"
#include "TernaryMlp.hpp"
#if TERNARYCOUNTER_TRAIN_FP32_BASELINE
#include "Fp32Mlp.hpp"
#endif

#include <TernaryCounter_Checkpoint.hpp>
#include <TernaryCounter_Schedule.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace TernaryCounter::Train {

/// Standardized images and labels of one split on the device.
template <class Mem>
struct DeviceSet {
  Matrix<Mem> x;
  Kokkos::View<std::int32_t*, Mem> y;
  std::int64_t count = 0;

  DeviceSet(const ImageSet& set, std::int64_t count_, const Standardizer& standardize)
      : x(Kokkos::view_alloc("ternary-counter-train::images", Kokkos::WithoutInitializing), count_,
          set.pixels),
        y(Kokkos::view_alloc("ternary-counter-train::labels", Kokkos::WithoutInitializing), count_),
        count(count_) {
    const std::vector<float> host_x = standardize.apply(set.images, count);
    const std::vector<std::int32_t> host_y(set.labels.begin(), set.labels.begin() + count);
    Kokkos::deep_copy(x, Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace>(
                             host_x.data(), count, set.pixels));
    Kokkos::deep_copy(y,
                      Kokkos::View<const std::int32_t*, Kokkos::HostSpace>(host_y.data(), count));
  }
};

/// Which rank handles a sample: a pass over `count` samples in batches of `batch`, every batch
/// split into the ranks' blocks.
struct BatchBlocks {
  const Examples::Processes& processes;
  std::int64_t count, batch;

  /// This rank's block [first, last) of the batch that starts at sample `first`.
  std::pair<std::int64_t, std::int64_t> block(std::int64_t first) const {
    const auto [a, b] = processes.block(std::min(batch, count - first));
    return {first + a, first + b};
  }
  bool mine(std::int64_t sample) const {
    const auto [a, b] = block(sample - sample % batch);
    return a <= sample && sample < b;
  }
};

/// Mean loss and accuracy of per-sample results (each rank's in the samples `blocks` gives it),
/// summed on the host in sample order.
template <class Mem>
std::pair<double, double> mean_loss_accuracy(const Kokkos::View<float*, Mem>& losses,
                                             const Kokkos::View<std::int32_t*, Mem>& correct,
                                             const BatchBlocks& blocks) {
  const auto l = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, losses);
  const auto c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, correct);
  const auto mine = [&](std::int64_t m) { return blocks.mine(m); };
  blocks.processes.share(l, mine);
  blocks.processes.share(c, mine);
  double loss = 0, hits = 0;
  for (std::size_t m = 0; m < l.extent(0); ++m) {
    loss += l(m);
    hits += c(m);
  }
  return {loss / double(l.extent(0)), hits / double(l.extent(0))};
}

template <class ExecSpace, class Model>
int train_images(const Examples::Processes& processes, const ExecSpace& space, Model& model,
                 const ImageOptions& o, const DeviceSet<typename ExecSpace::memory_space>& train,
                 const DeviceSet<typename ExecSpace::memory_space>& test) {
  using Mem = typename ExecSpace::memory_space;
  const std::int64_t steps_per_epoch = (train.count + o.batch - 1) / o.batch;
  const std::int64_t total_steps = steps_per_epoch * o.epochs;
  if (model.step() % steps_per_epoch != 0) {
    throw std::runtime_error("the checkpoint's step " + std::to_string(model.step()) +
                             " is not at the end of an epoch of " +
                             std::to_string(steps_per_epoch) + " steps");
  }
  const std::int64_t first_epoch = model.step() / steps_per_epoch + 1;
  const std::int64_t last_epoch = o.stop_after > 0 ? std::min(o.stop_after, o.epochs) : o.epochs;
  if (first_epoch > last_epoch) {
    throw std::runtime_error("nothing to train: epoch " + std::to_string(first_epoch - 1) +
                             " is done and the run stops after epoch " +
                             std::to_string(last_epoch));
  }
  const std::int64_t eval_rows = std::max<std::int64_t>(o.batch, 1024);
  Matrix<Mem> x(Kokkos::view_alloc("ternary-counter-train::batch_x", Kokkos::WithoutInitializing),
                eval_rows, train.x.extent(1));
  Kokkos::View<std::int32_t*, Mem> labels("ternary-counter-train::batch_labels", eval_rows);
  Kokkos::View<std::int32_t*, Mem> order("ternary-counter-train::order", train.count);
  Kokkos::View<std::int32_t*, Mem> identity("ternary-counter-train::test_order", test.count);
  Kokkos::View<float*, Mem> train_losses("ternary-counter-train::train_losses", train.count);
  Kokkos::View<std::int32_t*, Mem> train_correct("ternary-counter-train::train_correct",
                                                 train.count);
  Kokkos::View<float*, Mem> test_losses("ternary-counter-train::test_losses", test.count);
  Kokkos::View<std::int32_t*, Mem> test_correct("ternary-counter-train::test_correct", test.count);
  Kokkos::parallel_for(
      "ternary-counter-train::iota", Kokkos::RangePolicy<ExecSpace>(space, 0, test.count),
      KOKKOS_LAMBDA(std::int64_t n) { identity(n) = std::int32_t(n); });
  // The first `count` rows / items, as the View types the model and kernels take.
  const auto rows = [](const Matrix<Mem>& view, std::int64_t count) -> Matrix<Mem> {
    return Kokkos::subview(view, std::pair<std::int64_t, std::int64_t>(0, count), Kokkos::ALL);
  };
  const auto items = [](const Kokkos::View<std::int32_t*, Mem>& view,
                        std::int64_t count) -> Kokkos::View<std::int32_t*, Mem> {
    return Kokkos::subview(view, std::pair<std::int64_t, std::int64_t>(0, count));
  };

  const BatchBlocks train_blocks{processes, train.count, o.batch};
  const BatchBlocks test_blocks{processes, test.count, eval_rows};

  const auto t0 = std::chrono::steady_clock::now();
  double loss = 0, train_acc = 0, test_acc = 0;
  for (std::int64_t epoch = first_epoch; epoch <= last_epoch; ++epoch) {
    const auto epoch_start = std::chrono::steady_clock::now();
    const std::vector<std::int32_t> host_order =
        epoch_order(train.count, derive_seed(o.seed, 300), epoch);
    Kokkos::deep_copy(
        space, order,
        Kokkos::View<const std::int32_t*, Kokkos::HostSpace>(host_order.data(), train.count));
    for (std::int64_t first = 0; first < train.count; first += o.batch) {
      const std::int64_t batch = std::min(o.batch, train.count - first);
      const auto [a, b] = train_blocks.block(first);
      model.set_schedule(cosine_factor(model.step(), total_steps), o.decay_lr_scale);
      gather_batch(space, train.x, train.y, order, a, rows(x, b - a), items(labels, b - a));
      model.train_step(rows(x, b - a), items(labels, b - a), train_losses, train_correct, a, batch);
    }
    space.fence();
    const double train_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count();
    std::tie(loss, train_acc) = mean_loss_accuracy(train_losses, train_correct, train_blocks);
    for (std::int64_t first = 0; first < test.count; first += eval_rows) {
      const auto [a, b] = test_blocks.block(first);
      gather_batch(space, test.x, test.y, identity, a, rows(x, b - a), items(labels, b - a));
      model.evaluate(rows(x, b - a), items(labels, b - a), test_losses, test_correct, a);
    }
    test_acc = mean_loss_accuracy(test_losses, test_correct, test_blocks).second;
    std::printf("epoch=%lld loss=%.6f train_acc=%.4f test_acc=%.4f samples/s=%.0f\n",
                (long long)epoch, loss, train_acc, test_acc, double(train.count) / train_seconds);
    std::fflush(stdout);
    if (!o.save.empty()) {
      // Only the ternary model has a checkpoint format (parse_image_options rejects the rest).
      if constexpr (requires { model.save(o.save, image_run_metadata(o)); }) {
        model.save(o.save, image_run_metadata(o));
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("final: epoch=%lld loss=%.6f train_acc=%.4f test_acc=%.4f seconds=%.1f\n",
              (long long)last_epoch, loss, train_acc, test_acc, seconds);
  return 0;
}

/// The local part of an image run: options, checkpoint and data read, nothing collective.
struct ImageJob {
  ImageOptions o;
  std::optional<Checkpoint> resumed;
  FashionMnist data;
  double load_seconds = 0;
  Examples::Settings settings;  ///< every option and the identity of every file read
};

/// Parses the options, reads the checkpoint (once) and the data, and checks that the arrays
/// they make are not too large. Throws with the reason.
inline ImageJob prepare_image_job(const std::vector<std::string>& args, const std::string& data_dir,
                                  const Examples::Processes& processes) {
  ImageJob job;
  ImageOptions& o = job.o;
  o = parse_image_options(args);
  o.data_dir = data_dir;
  if (o.fp32_baseline && processes.size() > 1) {
    // Data-parallel Adam would sum float gradients across ranks: an order that changes the bits.
    throw std::invalid_argument("--fp32-baseline runs as one process (" +
                                std::to_string(processes.size()) + " ranks given)");
  }
  std::string checkpoint_identity;
  if (!o.resume.empty()) {
    const std::string bytes = read_checkpoint_bytes(o.resume);
    checkpoint_identity = Examples::content_identity(bytes);
    job.resumed = parse_checkpoint(bytes, o.resume);
    std::map<std::string, std::string> meta = job.resumed->metadata;
    meta["C"] = std::to_string(job.resumed->C);
    adopt_image_metadata(o, meta, o.resume);
  }
  std::vector<std::int64_t> widths{std::int64_t(28) * 28};
  widths.insert(widths.end(), o.hidden.begin(), o.hidden.end());
  widths.push_back(fashion_mnist_classes);
  const std::int64_t max_rows = std::max<std::int64_t>(o.batch, 1024);
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    for (const auto& [rows, cols] : {std::pair{widths[l + 1], widths[l]},
                                     std::pair{max_rows, std::max(widths[l], widths[l + 1])}}) {
      if (rows > (std::int64_t(1) << 40) / cols) {
        throw std::invalid_argument("--batch and --hidden make an array of " +
                                    std::to_string(rows) + " x " + std::to_string(cols) +
                                    " values, more than 2^40");
      }
    }
  }
  const auto load_start = std::chrono::steady_clock::now();
  job.data = load_fashion_mnist(o.data_dir);
  job.load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  job.settings = image_settings(o);
  job.settings.emplace_back("--data-dir", o.data_dir);
  for (const auto& [file, identity] : job.data.identities) {
    job.settings.emplace_back("data " + file, identity);
  }
  job.settings.emplace_back("checkpoint " + o.resume, checkpoint_identity);
  return job;
}

/// Builds the model of a prepared job (ternary or the FP32 baseline) and trains it.
template <class ExecSpace>
int run_image_task(const ImageJob& job, const Examples::Processes& processes) {
  using Mem = typename ExecSpace::memory_space;
  const ImageOptions& o = job.o;
  const FashionMnist& data = job.data;
  const auto limit = [](std::int64_t limit, std::int64_t count) {
    return limit > 0 ? std::min(limit, count) : count;
  };
  const std::int64_t n_train = limit(o.train_limit, data.train.count);
  const std::int64_t n_test = limit(o.test_limit, data.test.count);
  const Standardizer standardize = Standardizer::fit(data.train.images, n_train, data.train.pixels);
  const DeviceSet<Mem> train(data.train, n_train, standardize);
  const DeviceSet<Mem> test(data.test, n_test, standardize);
  std::vector<std::int64_t> widths{data.train.pixels};
  widths.insert(widths.end(), o.hidden.begin(), o.hidden.end());
  widths.push_back(fashion_mnist_classes);
  std::string layers;
  for (std::size_t k = 0; k < widths.size(); ++k) {
    layers += (k ? "-" : "") + std::to_string(widths[k]);
  }
  const double load_seconds = job.load_seconds;

  const ExecSpace space;
  const std::int64_t max_rows = std::max<std::int64_t>(o.batch, 1024);
  const auto header = [&](const std::string& model, const std::string& recipe) {
    std::printf(
        "ternary-counter-train: dataset=fashion-mnist model=%s layers=%s exec=%s train=%lld "
        "test=%lld batch=%lld epochs=%lld seed=%u %s (data loaded in %.1f s)\n",
        model.c_str(), layers.c_str(), ExecSpace::name(), (long long)n_train, (long long)n_test,
        (long long)o.batch, (long long)o.epochs, o.seed, recipe.c_str(), load_seconds);
  };
  // Built for the baseline too, without activation buffers: its state size is printed.
  TernaryMlp<ExecSpace> ternary(processes, space, widths, o.params, o.precision, o.seed,
                                o.fp32_baseline ? 0 : max_rows);
  const double ternary_bytes = ternary.state_bytes_per_weight();
  const auto state_line = [&](double fp32_bytes) {
    std::printf(
        "state: bytes/weight ternary=%.4f (0.75 codes + 2 floats per row) fp32-adam=%.2f (w, m, "
        "v, gradient)\n",
        ternary_bytes, fp32_bytes);
  };
  // W, Adam's m and v, and the gradient buffer the baseline keeps.
  constexpr double fp32_adam_bytes = 16.0;
  if (o.fp32_baseline) {
#if TERNARYCOUNTER_TRAIN_FP32_BASELINE
    Fp32Mlp<ExecSpace> fp32(space, widths, o.params.C, o.seed, o.adam, max_rows);
    char recipe[64];
    std::snprintf(recipe, sizeof recipe, "adam_lr=%g (cosine)", o.adam.lr);
    header(fp32.name(), recipe);
    state_line(fp32_adam_bytes);
    return train_images(processes, space, fp32, o, train, test);
#else
    throw std::invalid_argument("--fp32-baseline needs Kokkos Kernels (this build has none)");
#endif
  }
  if (job.resumed) ternary.load(*job.resumed, o.resume);
  char recipe[160];
  std::snprintf(recipe, sizeof recipe, "C=%d lr=%g lr_scale=%g rms_beta=%g (cosine%s)", o.params.C,
                o.params.lr, o.params.lr_scale, o.params.rms_beta,
                o.decay_lr_scale ? " on lr and lr_scale" : " on lr");
  header(ternary.name(), recipe);
  state_line(fp32_adam_bytes);
  return train_images(processes, space, ternary, o, train, test);
}

}  // namespace TernaryCounter::Train
