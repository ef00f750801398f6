// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ternary-counter-perf-mpi [--precision fp32|int8] [--shape OUTxINxM]... [--repeat N] [--json F]
// (under mpirun). Data-parallel training of one layer on N ranks, each with M samples of a global
// batch of N*M, timed in one run:
//   update: TernaryCounter::Distributed::update_from_io in the chosen precision (fp32: all-gather
//           x and grad_out, update this rank's rows over all samples; int8: all-reduce the
//           columns' absmax, reduce-scatter the int32 gradient sums by rows, update this rank's
//           rows; both then all-gather the updated rows; bit-identical to one process for any N);
//   data parallel: the vendor GEMM on the local samples, an all-reduce of the [out, in] gradient
//           (MPI_Allreduce, or ncclAllReduce between CUDA GPUs) and the dense update (results
//           depend on N: the all-reduce's order does);
//   a whole layer step (forward + backward_input on the local samples + the update), against
//   the same step of rank 0 alone on its M samples (weak scaling: efficiency = that time / the
//   N-rank step's) and on the global batch (one process doing the whole batch).
// A time is the slowest rank's, median over repeats. Bytes per rank and update: the model's
// (Distributed::update_bytes_sent_per_rank / integer_update_bytes_sent_per_rank, a ring's) and
// those the Communicator counted (the most any rank sent).
#include "PerfInputs.hpp"
#include "PerfJson.hpp"
#include "PerfRevision.hpp"
#include "PerfTiming.hpp"
#include "VendorGemm.hpp"

#include <mpi.h>
#include <TernaryCounter.hpp>
#include <TernaryCounter_Distributed.hpp>

#ifdef TERNARYCOUNTER_HAVE_NCCL
#include <nccl.h>
#endif

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace TernaryCounter;
using namespace TernaryCounter::Perf;
namespace Dist = TernaryCounter::Distributed;

const char* const usage =
    "usage: mpirun -np N ternary-counter-perf-mpi [--precision P] [--shape OUTxINxM]...\n"
    "                                              [--repeat R] [--json F]\n"
    "  --precision P     fp32 (default) or int8: the arithmetic of the layer and its update\n"
    "  --shape OUTxINxM  a layer of OUT x IN weights, M samples per rank (repeatable; IN a\n"
    "                    multiple of 4). Default: 4096x4096x2048 4096x4096x512 on a GPU,\n"
    "                    1024x1024x512 1024x1024x64 on a host backend\n"
    "  --repeat R        timed repeats per measurement, R >= 3 (default 5); the median counts\n"
    "  --json F          also write the results as JSON to F (rank 0)\n";

constexpr bool on_gpu = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;

struct Shape {
  std::int64_t out, in, m;
};

struct Options {
  Precision precision = Precision::fp32;
  std::vector<Shape> shapes;
  int repeat = 5;
  std::string json;
};

std::int64_t positive(const std::string& text, const std::string& what) {
  std::int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value <= 0) {
    throw std::invalid_argument(what + " must be a positive integer, got '" + text + "'");
  }
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (arg.rfind("--kokkos-", 0) == 0) continue;
    if (arg == "--help" || arg == "-h") throw std::invalid_argument(usage);
    if (k + 1 >= argc) throw std::invalid_argument(arg + " needs a value (or is unknown)");
    const std::string value = argv[++k];
    if (arg == "--shape") {
      std::vector<std::string> parts(1);
      for (const char c : value) {
        if (c == 'x') {
          parts.emplace_back();
        } else {
          parts.back().push_back(c);
        }
      }
      if (parts.size() != 3) throw std::invalid_argument("--shape expects OUTxINxM: " + value);
      const Shape s{positive(parts[0], "OUT"), positive(parts[1], "IN"), positive(parts[2], "M")};
      if (s.in % 4 != 0) throw std::invalid_argument("--shape " + value + ": IN % 4 != 0");
      o.shapes.push_back(s);
    } else if (arg == "--precision") {
      if (value != "fp32" && value != "int8") {
        throw std::invalid_argument("--precision must be fp32 or int8, got '" + value + "'");
      }
      o.precision = value == "int8" ? Precision::int8 : Precision::fp32;
    } else if (arg == "--repeat") {
      o.repeat = int(positive(value, "--repeat"));
      if (o.repeat < 3) throw std::invalid_argument("--repeat must be >= 3");
    } else if (arg == "--json") {
      o.json = value;
    } else {
      throw std::invalid_argument("unknown option " + arg + "\n" + usage);
    }
  }
  if (o.shapes.empty()) {
    o.shapes = on_gpu ? std::vector<Shape>{{4096, 4096, 2048}, {4096, 4096, 512}}
                      : std::vector<Shape>{{1024, 1024, 512}, {1024, 1024, 64}};
  }
  return o;
}

/// Runs prepare(); body() once untimed; then `repeats` times prepare(), a barrier, body() timed
/// up to a fence. Each repeat's time is the slowest rank's.
template <class Prepare, class Body>
Samples time_collective(const Dist::Communicator& comm, int repeats, Prepare&& prepare,
                        Body&& body) {
  prepare();
  body();
  Kokkos::fence();
  Samples samples;
  for (int r = 0; r < repeats; ++r) {
    prepare();
    Kokkos::fence();
    MPI_Barrier(comm.mpi());
    Kokkos::Timer timer;
    body();
    Kokkos::fence();
    double ms = timer.seconds() * 1e3, slowest = 0;
    MPI_Allreduce(&ms, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm.mpi());
    samples.ms.push_back(slowest);
  }
  return samples;
}

/// The sum over ranks of `grad` [out, in], in place: the data-parallel gradient all-reduce.
class GradientAllReduce {
 public:
  GradientAllReduce(const Dist::Communicator& comm, const ExecSpace& space)
      : comm_(comm), space_(space) {}

  void operator()(const Matrix& grad) {
    const std::int64_t n = std::int64_t(grad.size());
#ifdef TERNARYCOUNTER_HAVE_NCCL
    if constexpr (on_gpu) {
      if (comm_.uses_nccl()) {
        const ncclResult_t r =
            ncclAllReduce(grad.data(), grad.data(), std::size_t(n), ncclFloat, ncclSum,
                          static_cast<ncclComm_t>(comm_.nccl()), space_.cuda_stream());
        if (r != ncclSuccess) throw std::runtime_error(ncclGetErrorString(r));
        return;
      }
    }
#endif
    if (n > INT32_MAX) throw std::runtime_error("the gradient exceeds MPI's int count");
    float* data = grad.data();
    if constexpr (on_gpu) {  // MPI without CUDA awareness: through the host
      if (std::int64_t(host_.extent(0)) != n) {
        host_ = Kokkos::View<float*, Kokkos::HostSpace>("TernaryCounter::Perf::host_grad", n);
      }
      Kokkos::deep_copy(space_, host_, Kokkos::View<float*, MemSpace>(grad.data(), n));
      space_.fence();
      data = host_.data();
    }
    space_.fence();
    MPI_Allreduce(MPI_IN_PLACE, data, int(n), MPI_FLOAT, MPI_SUM, comm_.mpi());
    if constexpr (on_gpu) {
      Kokkos::deep_copy(space_, Kokkos::View<float*, MemSpace>(grad.data(), n), host_);
    }
  }

 private:
  Dist::Communicator comm_;
  ExecSpace space_;
  Kokkos::View<float*, Kokkos::HostSpace> host_;
};

struct Result {
  Shape shape{};
  int ranks = 1;
  Samples update, data_parallel, layer_step, one_rank_step, one_process_step;
  double bytes_model = 0, bytes_counted = 0, data_parallel_bytes = 0;
  double ratio() const { return update.median() / data_parallel.median(); }
  /// Weak scaling: rank 0 alone on its M samples over the N-rank step on N*M.
  double weak_scaling_efficiency() const { return one_rank_step.median() / layer_step.median(); }
  double step_ratio() const { return layer_step.median() / one_process_step.median(); }
  double weights() const { return double(shape.out) * double(shape.in); }
};

Result run_shape(const Dist::Communicator& comm, const ExecSpace& space, const VendorGemm& vendor,
                 const Shape& shape, Precision precision, int repeats) {
  Result r;
  r.shape = shape;
  r.ranks = comm.size();
  const std::int64_t global_m = shape.m * comm.size();
  const auto alloc = [&](const char* label) {
    return Kokkos::view_alloc(space, std::string("TernaryCounter::Perf::") + label,
                              Kokkos::WithoutInitializing);
  };
  const Matrix x(alloc("x"), shape.m, shape.in), grad_out(alloc("grad_out"), shape.m, shape.out);
  const Matrix grad_w(alloc("grad_w"), shape.out, shape.in);
  const Matrix y(alloc("y"), shape.m, shape.out), grad_x(alloc("grad_x"), shape.m, shape.in);
  fill_normal(space, x, 1 + 2 * std::uint32_t(comm.rank()), 1.0f);
  fill_normal(space, grad_out, 2 + 2 * std::uint32_t(comm.rank()), 1e-3f);

  UpdateParams params;
  params.lr = 0.05;  // the values the measurements in docs/PERFORMANCE.md were taken with
  params.lr_scale = 2e-4;
  params.rms_beta = 0.9;
  params.seed = 2;
  ProductOptions products;
  products.precision = precision;
  products.seed = params.seed;
  ProductOptions local_products = products;
  local_products.sample_offset = shape.m * comm.rank();
  PackedState<MemSpace> state("TernaryCounter::Perf::state", shape.out, shape.in, params.C);
  randomize_ternary(state, 7, 0.02f);
  const PackedState<MemSpace> saved = create_mirror_and_copy(space, state);
  const auto restore = [&] { TernaryCounter::deep_copy(state, saved); };
  Dist::UpdateWorkspace<MemSpace> workspace;
  GradientAllReduce all_reduce(comm, space);

  r.update = time_collective(comm, repeats, restore, [&] {
    Dist::update_from_io(comm, space, state, x, grad_out, params, workspace, precision);
  });
  {
    restore();
    comm.reset_bytes_sent();
    Dist::update_from_io(comm, space, state, x, grad_out, params, workspace, precision);
    double mine = double(comm.bytes_sent());
    MPI_Allreduce(&mine, &r.bytes_counted, 1, MPI_DOUBLE, MPI_MAX, comm.mpi());
  }
  r.data_parallel = time_collective(comm, repeats, restore, [&] {
    vendor.grad_w(x, grad_out, grad_w);
    all_reduce(grad_w);
    update(space, state, grad_w, params);
  });
  r.layer_step = time_collective(comm, repeats, restore, [&] {
    forward(space, state, x, y, local_products);
    backward_input(space, state, grad_out, grad_x, local_products);
    Dist::update_from_io(comm, space, state, x, grad_out, params, workspace, precision);
  });
  {
    // Rank 0 alone (the others wait at the barrier), on its own M samples and on the global
    // batch.
    const bool me = comm.rank() == 0;
    const Matrix ws(alloc("workspace"), from_io_workspace_rows<ExecSpace>(shape.out, shape.in),
                    shape.in);
    r.one_rank_step = time_collective(comm, repeats, restore, [&] {
      if (!me) return;
      forward(space, state, x, y, products);
      backward_input(space, state, grad_out, grad_x, products);
      update_from_io(space, state, x, grad_out, params, ws, precision);
    });
    const std::int64_t gm = me ? global_m : 0;
    const Matrix gx(alloc("global_x"), gm, shape.in), gg(alloc("global_grad_out"), gm, shape.out);
    const Matrix gy(alloc("global_y"), gm, shape.out), ggx(alloc("global_grad_x"), gm, shape.in);
    fill_normal(space, gx, 11, 1.0f);
    fill_normal(space, gg, 12, 1e-3f);
    r.one_process_step = time_collective(comm, repeats, restore, [&] {
      if (!me) return;
      forward(space, state, gx, gy, products);
      backward_input(space, state, gg, ggx, products);
      update_from_io(space, state, gx, gg, params, ws, precision);
    });
  }
  r.bytes_model =
      precision == Precision::int8
          ? Dist::integer_update_bytes_sent_per_rank(shape.out, shape.in, comm.size())
          : Dist::update_bytes_sent_per_rank(shape.out, shape.in, global_m, comm.size());
  r.data_parallel_bytes = 2.0 * 4.0 * double(shape.out) * double(shape.in) *
                          double(comm.size() - 1) / double(comm.size());
  return r;
}

std::string record_json(const Result& r) {
  JsonObject o;
  o.integer("out", r.shape.out)
      .integer("in", r.shape.in)
      .integer("M_per_rank", r.shape.m)
      .integer("ranks", r.ranks)
      .integer("M_global", r.shape.m * r.ranks)
      .num("update_ms", r.update.median())
      .num("data_parallel_update_ms", r.data_parallel.median())
      .num("ratio_update_over_data_parallel", r.ratio())
      .num("layer_step_ms", r.layer_step.median())
      .num("one_rank_layer_step_ms", r.one_rank_step.median())
      .num("weak_scaling_efficiency", r.weak_scaling_efficiency())
      .num("one_process_global_batch_layer_step_ms", r.one_process_step.median())
      .num("ratio_step_over_one_process_global_batch", r.step_ratio())
      .num("bytes_sent_per_rank", r.bytes_model)
      .num("bytes_counted_per_rank", r.bytes_counted)
      .num("bytes_sent_per_weight", r.bytes_model / r.weights())
      .num("bytes_counted_per_weight", r.bytes_counted / r.weights())
      .num("data_parallel_bytes_sent_per_rank", r.data_parallel_bytes)
      .raw("update_ms_samples", json_numbers(r.update.ms))
      .raw("data_parallel_update_ms_samples", json_numbers(r.data_parallel.ms))
      .raw("layer_step_ms_samples", json_numbers(r.layer_step.ms))
      .raw("one_rank_layer_step_ms_samples", json_numbers(r.one_rank_step.ms))
      .raw("one_process_global_batch_layer_step_ms_samples", json_numbers(r.one_process_step.ms));
  return o.text("    ");
}

int run(const Options& options, const Dist::Communicator& comm) {
  const ExecSpace space;
  const VendorGemm vendor(space);
  const bool root = comm.rank() == 0;
  const bool nccl = on_gpu && comm.uses_nccl();  // collective: every rank asks
  if (root) {
    std::printf(
        "ternary-counter-perf-mpi  git %s  backend %s  precision %s  ranks %d  "
        "concurrency/rank %d  device collectives: %s\nvendor GEMM: %s\n",
        revision_summary().c_str(), ExecSpace::name(), precision_name(options.precision),
        comm.size(), space.concurrency(),
        on_gpu ? (nccl ? "NCCL" : "MPI through host memory") : "MPI (host memory)",
        vendor.description().c_str());
    std::printf("%6s %6s %6s %5s | %9s %9s %6s | %9s %9s %6s %9s | %8s %8s %6s %6s\n", "out", "in",
                "M/rank", "ranks", "update ms", "dp ms", "ratio", "step ms", "1-rank ms", "weak",
                "global ms", "model MB", "count MB", "B/w", "dp MB");
    std::fflush(stdout);
  }
  std::vector<Result> results;
  for (const Shape& shape : options.shapes) {
    results.push_back(run_shape(comm, space, vendor, shape, options.precision, options.repeat));
    const Result& r = results.back();
    if (root) {
      std::printf(
          "%6lld %6lld %6lld %5d | %9.3f %9.3f %6.2f | %9.3f %9.3f %6.2f %9.3f | %8.2f %8.2f %6.2f "
          "%6.2f\n",
          (long long)shape.out, (long long)shape.in, (long long)shape.m, r.ranks, r.update.median(),
          r.data_parallel.median(), r.ratio(), r.layer_step.median(), r.one_rank_step.median(),
          r.weak_scaling_efficiency(), r.one_process_step.median(), r.bytes_model / 1e6,
          r.bytes_counted / 1e6, r.bytes_model / r.weights(), r.data_parallel_bytes / 1e6);
      std::fflush(stdout);
    }
  }
  if (root) {
    std::printf(
        "(median of %d repeats, slowest rank; update = Distributed::update_from_io, dp = vendor "
        "GEMM on the local samples + gradient all-reduce + dense update, ratio = update/dp; step "
        "= forward + backward_input + update on M/rank; 1-rank = the same step on rank 0 alone "
        "with M samples, weak = 1-rank / step; global = rank 0 alone with the global batch; "
        "model MB = the ring model's bytes sent per rank per update, count MB = the most any "
        "rank's Communicator counted, B/w = model bytes per weight; dp MB = the FP32 gradient "
        "all-reduce's ring bytes)\n",
        options.repeat);
  }
  if (root && !options.json.empty()) {
    std::string records = "[";
    for (std::size_t k = 0; k < results.size(); ++k) {
      records += (k ? ",\n    " : "\n    ") + record_json(results[k]);
    }
    JsonObject top;
    top.str("program", "ternary-counter-perf-mpi")
        .str("git_revision", Perf::git_revision)
        .str("git_diff_sha256", Perf::git_diff_sha256)
        .str("backend", ExecSpace::name())
        .integer("ranks", comm.size())
        .integer("concurrency_per_rank", space.concurrency())
        .str("vendor_gemm", vendor.description())
        .str("precision", precision_name(options.precision))
        .str("device_collectives", nccl ? "NCCL" : "MPI")
        .integer("repeats", options.repeat)
        .raw("records", records + "\n  ]");
    std::ofstream json(options.json);
    json << top.text() << "\n";
    if (!json) throw std::runtime_error("cannot write " + options.json);
    std::printf("wrote %s\n", options.json.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, rc = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    try {
      // Every rank parses, then all agree (or all stop with the same error): a rank that left
      // alone would leave the others waiting in a collective.
      const Dist::Communicator comm;
      Options options;
      std::string error;
      try {
        options = parse(argc, argv);
      } catch (const std::exception& e) {
        error = e.what();
      }
      Dist::Settings settings = {{"--precision", precision_name(options.precision)},
                                 {"--repeat", std::to_string(options.repeat)},
                                 {"--json", options.json}};
      for (std::size_t k = 0; k < options.shapes.size(); ++k) {
        const Shape& shape = options.shapes[k];
        settings.emplace_back("--shape #" + std::to_string(k + 1),
                              std::to_string(shape.out) + "x" + std::to_string(shape.in) + "x" +
                                  std::to_string(shape.m));
      }
      Dist::agree_on_settings(comm, "ternary-counter-perf-mpi", error, settings);
      rc = run(options, comm);
    } catch (const std::exception& e) {
      if (rank == 0) std::fprintf(stderr, "ternary-counter-perf-mpi: %s\n", e.what());
      rc = 1;
    }
  }
  MPI_Finalize();
  return rc;
}
