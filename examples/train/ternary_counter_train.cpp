// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ternary-counter-train: the main job. With --dataset fashion-mnist (the default when the data
// is installed) it trains a ternary MLP on Fashion-MNIST (ImageTraining.hpp). With --dataset
// teacher (this file) it trains a two-layer ternary MLP (in -> hidden, ReLU, -> classes) with
// counter updates on a synthetic classification task whose answer is known: the labels are the
// argmax of a fixed random ternary "teacher" network (in -> teacher_hidden, ReLU, -> classes).
// Inputs are uniform in [-sqrt 3, sqrt 3] (unit variance), drawn by hash from (seed, step), so a
// step's batch is a function of the step alone and a resumed run sees the same data.
// Each step: forward -> softmax cross-entropy -> backward_input -> update_from_io (both layers).
// The printed loss and accuracy are measured on a fixed evaluation set, summed on the host in a
// fixed order, so every backend prints the same numbers.
#include "DatasetChoice.hpp"
#include "ImageTraining.hpp"
#include "TeacherOptions.hpp"

#include <CommandLine.hpp>
#include <DataParallel.hpp>
#include <TernaryCounter.hpp>
#include <ThreadLimit.hpp>

#include <Kokkos_Core.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace TernaryCounter;
using Examples::Processes;
using Examples::Settings;
using Train::data_steps;
using Train::Options;
using Train::teacher_usage;

// The local part of a run: options and checkpoint read, nothing collective.
struct TeacherJob {
  Options o;
  std::optional<Checkpoint> resumed;
  Examples::Settings settings;
};

TeacherJob prepare_teacher(int argc, char** argv) {
  TeacherJob job;
  job.o = Train::parse_teacher_options(argc, argv);
  std::string identity;
  if (!job.o.resume.empty()) {
    // Read once: the metadata and the layers come from the same bytes.
    const std::string bytes = read_checkpoint_bytes(job.o.resume);
    identity = Examples::content_identity(bytes);
    job.resumed = parse_checkpoint(bytes, job.o.resume);
    Train::adopt_teacher_metadata(job.o, job.resumed->metadata, job.o.resume);
  }
  job.settings = Train::teacher_settings(job.o);
  job.settings.emplace_back("checkpoint " + job.o.resume, identity);
  return job;
}

// Independent seeds for the teacher, the student's init, each layer's rounding and the data.
std::uint32_t derive(std::uint32_t seed, std::uint32_t purpose) {
  return hash_u32(seed ^ hash_u32(purpose * 0x9E3779B9u + 0x632BE5ABu));
}

template <class ExecSpace>
class Trainer {
 public:
  using Mem = typename ExecSpace::memory_space;
  using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, Mem>;
  using Labels = Kokkos::View<int*, Mem>;
  using Codes = typename PackedState<Mem>::codes_view;

  // Every array one pass over `rows` samples needs, allocated once (no allocation per step).
  struct Buffers {
    Matrix x, teacher_pre, teacher_logits, pre, h, logits, grad_logits, grad_h;
    Labels labels;
    Kokkos::View<float*, Mem> losses;
    Kokkos::View<int*, Mem> correct;

    // student = false: only the data arrays (x, the teacher's, labels) get `rows` rows.
    Buffers(const Options& o, std::int64_t rows, bool student = true)
        : x(alloc("x"), rows, o.in),
          teacher_pre(alloc("teacher_pre"), rows, o.teacher_hidden),
          teacher_logits(alloc("teacher_logits"), rows, o.classes),
          pre(alloc("pre"), student ? rows : 0, o.hidden),
          h(alloc("h"), student ? rows : 0, o.hidden),
          logits(alloc("logits"), student ? rows : 0, o.classes),
          grad_logits(alloc("grad_logits"), student ? rows : 0, o.classes),
          grad_h(alloc("grad_h"), student ? rows : 0, o.hidden),
          labels(alloc("labels"), rows),
          losses(alloc("losses"), student ? rows : 0),
          correct(alloc("correct"), student ? rows : 0) {}

    static auto alloc(const std::string& what) {
      return Kokkos::view_alloc("ternary-counter-train::" + what, Kokkos::WithoutInitializing);
    }
  };

  // Data parallel: every rank makes the whole data and trains on its block of each batch.
  Trainer(const Options& o, const Processes& processes)
      : o_(o),
        processes_(processes),
        teacher1_("teacher1", o.teacher_hidden, o.in, params().C),
        teacher2_("teacher2", o.classes, o.teacher_hidden, params().C),
        layer1_(processes, space_, "layer1", o.hidden, o.in, params(), derive(o.seed, 3),
                o.precision),
        layer2_(processes, space_, "layer2", o.classes, o.hidden, params(), derive(o.seed, 4),
                o.precision),
        batch_(o, local(o.batch)),
        eval_(o, local(o.eval)),
        eval_data_(o, o.eval, false),
        data_(o, data_steps * o.batch, false) {
    // Unit-variance pre-activations at init: W = scale * t with 2/3 of t non-zero.
    randomize_ternary(teacher1_, derive(o.seed, 1), init_scale(o.in, 1.0));
    randomize_ternary(teacher2_, derive(o.seed, 2), init_scale(o.teacher_hidden, 0.5));
    randomize_ternary(layer1_.state(), derive(o.seed, 5), init_scale(o.in, 1.0));
    randomize_ternary(layer2_.state(), derive(o.seed, 6), init_scale(o.hidden, 0.5));
    make_data(eval_data_, 0xFFFFFFFFu, o.eval);
  }

  std::int64_t local(std::int64_t n) const {
    const auto [first, last] = processes_.block(n);
    return last - first;
  }

  static UpdateParams params() {
    UpdateParams p;
    p.C = 8;
    p.lr = 0.02;        // counter ticks per step: ~25 flips/step of ~4.6k weights
    p.lr_scale = 2e-2;  // lets the row scales (the logit temperature) adapt
    p.rms_beta = 0.9;
    return p;
  }

  Examples::Layer<ExecSpace>& layer1() { return layer1_; }
  Examples::Layer<ExecSpace>& layer2() { return layer2_; }
  std::int64_t step() const { return layer1_.step(); }

  /// One training step; returns the number of ternary values that changed.
  std::int64_t train_step() {
    Buffers& b = batch_;
    // The data of data_steps steps is made at once (fewer kernel launches); a step's samples
    // depend only on the seed and the step, never on where a block starts.
    const std::int64_t s = step(), B = o_.batch;
    if (data_first_ < 0 || s < data_first_ || s >= data_first_ + data_steps) {
      make_data(data_, std::uint32_t(s), B);
      data_first_ = s;
    }
    const auto [first, last] = processes_.block(B);
    const std::pair<std::int64_t, std::int64_t> rows((s - data_first_) * B + first,
                                                     (s - data_first_) * B + last);
    b.x = Kokkos::subview(data_.x, rows, Kokkos::ALL);
    b.labels = Kokkos::subview(data_.labels, rows);
    forward_loss(b, B);
    layer2_.backward_input(b.grad_logits, b.grad_h);
    relu_backward(b.pre, b.grad_h);  // grad_h becomes the gradient of the pre-activations
    save_codes();
    layer2_.update_from_io(b.h, b.grad_logits);
    layer1_.update_from_io(b.x, b.grad_h);
    return count_flips();
  }

  /// Mean loss and accuracy on the evaluation set, summed on the host in sample order (each
  /// rank evaluates its block; the per-sample values are gathered in global order).
  std::pair<double, double> evaluate() {
    const auto rows = processes_.block(o_.eval);
    eval_.x = Kokkos::subview(eval_data_.x, rows, Kokkos::ALL);
    eval_.labels = Kokkos::subview(eval_data_.labels, rows);
    forward_loss(eval_, o_.eval);
    const auto l = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, eval_.losses);
    const auto c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, eval_.correct);
    const double loss = processes_.sum_in_order<float>(l, o_.eval);
    const double hits = processes_.sum_in_order<int>(c, o_.eval);
    return {loss / double(o_.eval), hits / double(o_.eval)};
  }

  // The kernels below are public only because CUDA forbids extended lambdas in private
  // member functions.

  // Inputs and teacher labels of all rows of b.x: row r is sample r % per_stream of stream
  // first_stream + r / per_stream (a stream is a training step, or the evaluation set).
  void make_data(Buffers& b, std::uint32_t first_stream, std::int64_t per_stream) const {
    make_inputs(b.x, first_stream, per_stream);
    forward(space_, teacher1_, b.x, b.teacher_pre);
    relu(b.teacher_pre, b.teacher_pre);
    forward(space_, teacher2_, b.teacher_pre, b.teacher_logits);
    argmax(b.teacher_logits, b.labels);
  }

  // The student's forward pass, per-sample losses and the loss gradient of the logits (of the
  // mean over a global batch of `batch` samples).
  void forward_loss(Buffers& b, std::int64_t batch) const {
    layer1_.forward(b.x, b.pre);
    relu(b.pre, b.h);
    layer2_.forward(b.h, b.logits);
    // Per sample: loss = log(sum exp(z - max)) - (z_label - max); grad = (softmax - onehot) / B.
    TernaryCounter::softmax_cross_entropy(space_, b.logits, b.labels, b.losses, b.correct, 0,
                                          b.grad_logits, 1.0f / float(batch));
  }

  static float init_scale(std::int64_t fan_in, double active) {
    return float(1.0 / std::sqrt(double(fan_in) * 2.0 / 3.0 * active));
  }

  void make_inputs(const Matrix& x, std::uint32_t first_stream, std::int64_t per_stream) const {
    const std::uint32_t base = derive(o_.seed, 7);
    const std::int64_t in = x.extent(1);
    Kokkos::parallel_for(
        "ternary-counter-train::inputs", range2(x.extent(0), in),
        KOKKOS_LAMBDA(std::int64_t r, std::int64_t i) {
          const std::uint32_t stream = first_stream + std::uint32_t(r / per_stream);
          const std::uint32_t seed = hash_u32(base ^ hash_u32(stream));
          const float u = uniform01(seed, element_index(r % per_stream, in, i));
          x(r, i) = (2.0f * u - 1.0f) * 1.7320508f;
        });
  }

  // labels(m) = the first k with the largest logits(m, k).
  void argmax(const Matrix& logits, const Labels& labels) const {
    const int K = int(logits.extent(1));
    Kokkos::parallel_for(
        "ternary-counter-train::argmax",
        Kokkos::RangePolicy<ExecSpace>(space_, 0, logits.extent(0)), KOKKOS_LAMBDA(std::int64_t m) {
          int best = 0;
          for (int k = 1; k < K; ++k) {
            if (logits(m, k) > logits(m, best)) best = k;
          }
          labels(m) = best;
        });
  }

  void relu(const Matrix& in, const Matrix& out) const {
    Kokkos::parallel_for(
        "ternary-counter-train::relu", range2(in.extent(0), in.extent(1)),
        KOKKOS_LAMBDA(std::int64_t m, std::int64_t j) {
          out(m, j) = in(m, j) > 0.0f ? in(m, j) : 0.0f;
        });
  }

  void relu_backward(const Matrix& pre, const Matrix& grad) const {
    Kokkos::parallel_for(
        "ternary-counter-train::relu_backward", range2(pre.extent(0), pre.extent(1)),
        KOKKOS_LAMBDA(std::int64_t m, std::int64_t j) {
          if (!(pre(m, j) > 0.0f)) grad(m, j) = 0.0f;
        });
  }

  void save_codes() {
    const auto copy = [&](const auto& codes, auto& before) {
      if (before.extent(0) != codes.extent(0) || before.extent(1) != codes.extent(1)) {
        before =
            std::remove_reference_t<decltype(before)>("before", codes.extent(0), codes.extent(1));
      }
      Kokkos::deep_copy(space_, before, codes);
    };
    copy(layer1_.state().codes, before1_);
    copy(layer2_.state().codes, before2_);
  }

  // Ternary values that changed in the last update of either layer, in one kernel (an integer
  // sum: any order gives the same).
  std::int64_t count_flips() const {
    const Codes b1 = before1_, a1 = layer1_.state().codes, b2 = before2_,
                a2 = layer2_.state().codes;
    const std::int64_t g1 = a1.extent(1) / bytes_per_group, g2 = a2.extent(1) / bytes_per_group;
    const std::int64_t n1 = std::int64_t(a1.extent(0)) * g1, n2 = std::int64_t(a2.extent(0)) * g2;
    const int lv = counter_levels(params().C);
    std::int64_t flips = 0;
    Kokkos::parallel_reduce(
        "ternary-counter-train::count_flips", Kokkos::RangePolicy<ExecSpace>(space_, 0, n1 + n2),
        KOKKOS_LAMBDA(std::int64_t k, std::int64_t & n) {
          const bool first = k < n1;
          const std::int64_t j = first ? k : k - n1, groups = first ? g1 : g2;
          const std::int64_t o = j / groups, g = j % groups;
          const std::uint32_t a = load_group(first ? &b1(o, 3 * g) : &b2(o, 3 * g));
          const std::uint32_t b = load_group(first ? &a1(o, 3 * g) : &a2(o, 3 * g));
          for (int lane = 0; lane < codes_per_group; ++lane) {
            n += (group_code(a, lane) / lv != group_code(b, lane) / lv) ? 1 : 0;
          }
        },
        flips);
    return flips;
  }

  // The rows x cols index space on this trainer's execution space.
  Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>> range2(std::int64_t rows,
                                                           std::int64_t cols) const {
    using Policy = Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>;
    using Point = typename Policy::point_type;
    return Policy(space_, Point{0, 0}, Point{rows, cols});
  }

 private:
  Options o_;
  const Processes& processes_;
  ExecSpace space_;
  PackedState<Mem> teacher1_, teacher2_;
  Examples::Layer<ExecSpace> layer1_, layer2_;
  // data_: the inputs and labels of data_steps steps; eval_data_: of the evaluation set.
  Buffers batch_, eval_, eval_data_, data_;
  std::int64_t data_first_ = -1;  // the step of data_'s first batch
  typename PackedState<Mem>::codes_view before1_, before2_;
};

template <class ExecSpace>
int run(const TeacherJob& job, const Processes& processes) {
  const Options& o = job.o;
  Trainer<ExecSpace> trainer(o, processes);
  if (job.resumed) {
    Examples::copy_layers<typename ExecSpace::memory_space>(
        processes, *job.resumed, o.resume,
        {{"layer1", trainer.layer1().state()}, {"layer2", trainer.layer2().state()}});
    trainer.layer1().set_step(job.resumed->step);
    trainer.layer2().set_step(job.resumed->step);
  }
  std::printf(
      "ternary-counter-train: exec=%s in=%lld hidden=%lld classes=%lld teacher-hidden=%lld "
      "batch=%lld eval=%lld seed=%u first-step=%lld steps=%lld\n",
      ExecSpace::name(), (long long)o.in, (long long)o.hidden, (long long)o.classes,
      (long long)o.teacher_hidden, (long long)o.batch, (long long)o.eval, o.seed,
      (long long)trainer.step(), (long long)o.steps);
  auto [loss, acc] = trainer.evaluate();
  std::printf("start: loss=%.6f acc=%.4f\n", loss, acc);
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  auto last = t0;
  std::int64_t flips = 0, since = 0;
  for (std::int64_t s = 0; s < o.steps; ++s) {
    flips += trainer.train_step();
    ++since;
    if ((s + 1) % o.log_every == 0 || s + 1 == o.steps) {
      Kokkos::fence();
      const auto now = std::chrono::steady_clock::now();
      const double seconds = std::chrono::duration<double>(now - last).count();
      std::tie(loss, acc) = trainer.evaluate();
      std::printf("step=%lld loss=%.6f acc=%.4f flips/step=%.1f steps/s=%.1f\n",
                  (long long)trainer.step(), loss, acc, double(flips) / double(since),
                  double(since) / seconds);
      std::fflush(stdout);
      flips = 0;
      since = 0;
      last = std::chrono::steady_clock::now();
    }
  }
  if (!o.save.empty()) {
    Examples::save_layers<typename ExecSpace::memory_space>(
        processes, o.save,
        {{"layer1", trainer.layer1().state()}, {"layer2", trainer.layer2().state()}},
        trainer.step(), Train::teacher_run_metadata(o));
    std::printf("saved: %s (step %lld)\n", o.save.c_str(), (long long)trainer.step());
  }
  std::printf("final: step=%lld loss=%.6f acc=%.4f\n", (long long)trainer.step(), loss, acc);
  return 0;
}

// The prepared run of either task (the local part: options and files read).
struct Job {
  std::string dataset;
  std::optional<TeacherJob> teacher;
  std::optional<Train::ImageJob> image;

  const Examples::Settings& settings() const {
    return teacher ? teacher->settings : image->settings;
  }
  const std::string& exec() const { return teacher ? teacher->o.exec : image->o.exec; }
};

// --save writes a regular file or a new name; anything else is refused before training, not
// after it (save_checkpoint refuses it too).
void check_save_path(const std::string& path) {
  struct stat info {};
  if (!path.empty() && ::lstat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    throw std::invalid_argument("--save " + path +
                                " exists and is not a regular file (a symbolic link, device, "
                                "FIFO or folder is never replaced)");
  }
}

Job prepare(char* program, const std::vector<std::string>& args, const Processes& processes) {
  const Train::DatasetChoice choice = Train::choose_dataset(args);
  std::printf("dataset: %s (%s)\n", choice.dataset.c_str(), choice.reason.c_str());
  std::fflush(stdout);
  Job job;
  job.dataset = choice.dataset;
  if (choice.dataset == "fashion-mnist") {
    job.image = Train::prepare_image_job(choice.rest, choice.data_dir, processes);
  } else {
    std::vector<char*> rest{program};
    for (const std::string& arg : choice.rest) rest.push_back(const_cast<char*>(arg.c_str()));
    job.teacher = prepare_teacher(int(rest.size()), rest.data());
  }
  check_save_path(job.teacher ? job.teacher->o.save : job.image->o.save);
  return job;
}

// Trains the prepared job on the execution space --exec names.
template <class ExecSpace>
int run_job(const Job& job, const Processes& processes) {
  return job.teacher ? run<ExecSpace>(*job.teacher, processes)
                     : Train::run_image_task<ExecSpace>(*job.image, processes);
}

int run_job(const Job& job, const Processes& processes) {
  if (job.exec() == "serial") {
#ifdef KOKKOS_ENABLE_SERIAL
    return run_job<Kokkos::Serial>(job, processes);
#else
    throw std::invalid_argument("--exec serial: this Kokkos build has no Serial backend");
#endif
  }
  return run_job<Kokkos::DefaultExecutionSpace>(job, processes);
}

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun the ranks train one model data-parallel; rank 0 prints and saves.
  const Processes processes(argc, argv);
  processes.print_on_root_only();
  const char* const program = "ternary-counter-train";
  std::optional<Examples::KokkosArguments> kokkos_args;
  try {
    kokkos_args.emplace(argc, argv, program);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    processes.abort(1);
  }
  Kokkos::ScopeGuard kokkos(kokkos_args->argc(), kokkos_args->argv());
  const std::vector<std::string> args(kokkos_args->argv() + 1,
                                      kokkos_args->argv() + kokkos_args->argc());
  const bool help = std::find(args.begin(), args.end(), "--help") != args.end() ||
                    std::find(args.begin(), args.end(), "-h") != args.end();
  // 1. Local: the options, the checkpoint and the data are read; nothing is collective, so an
  // error here is kept until every rank has got this far.
  Job job;
  std::string local_error;
  Settings settings{{"--help", help ? "given" : ""}};
  if (!help) {
    try {
      job = prepare(argv[0], args, processes);
      settings.insert(settings.end(), job.settings().begin(), job.settings().end());
    } catch (const std::exception& e) {
      local_error = e.what();
      if (local_error.empty()) local_error = "an error without a message";
    }
  }
  // 2. Every rank compares its settings with every other's: all stop alike, or none does.
  try {
    processes.agree("start-up", local_error, settings);
  } catch (const std::exception& e) {
    if (processes.root()) {
      std::fprintf(stderr, "%s: %s\n(--help lists the options)\n", program, e.what());
    }
    return 1;
  }
  if (help) {
    std::printf("%s\n\n--dataset teacher:\n%s\n", Train::image_usage, teacher_usage);
    return 0;
  }
  // 3. Collective training: an error on any rank ends the whole run at once.
  try {
    return run_job(job, processes);
  } catch (const std::exception& e) {
    if (processes.size() > 1) {
      std::fprintf(stderr, "%s: rank %d: %s\n", program, processes.rank(), e.what());
    } else {
      std::fprintf(stderr, "%s: %s\n", program, e.what());
    }
    processes.abort(1);
  }
}
