// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ternary-counter-perf [--shape OUTxINxM]... [--shapes llm|inference|transformer]
//                      [--workspace-mib N]
//                      [--team-size N] [--precision fp32|int8] [--repeat N] [--json FILE]
//                      [--kernels [--peak-tops N]]
// Times, per shape and in one run: update_from_io (the strict path, with a caller-owned
// workspace), the vendor path (vendor SGEMM forming grad_w, then our dense update) and the dense
// update alone; the layer's forward and backward_input; a whole ternary layer step (forward +
// backward_input + update_from_io) against a dense FP32 layer step (three vendor SGEMMs + the
// dense update); and the device copy bandwidth that the dense update is judged against.
// --precision int8 runs the layer's calls on the integer path (SPEC §6) and adds the vendor's
// int8 GEMM as a peer. --kernels then breaks one layer step into its kernels (Kokkos Tools
// callbacks, PerfKernelReport.hpp): each kernel's time, launches, modelled bytes
// (PerfKernelBytes.hpp), GB/s and share of the copy bandwidth, and the step's launch count and
// bytes per activation element.
// Absolute times on a shared machine mean little, so every ratio comes from the same run.
#include "PerfInputs.hpp"
#include "PerfJson.hpp"
#include "PerfKernelBytes.hpp"
#include "PerfKernelReport.hpp"
#include "PerfRevision.hpp"
#include "PerfTiming.hpp"
#include "VendorBf16Layer.hpp"
#include "VendorGemm.hpp"
#include "VendorGemm_SelfCheck.hpp"
#include "VendorInt8Gemm.hpp"

#include <TernaryCounter.hpp>

#include "engines/TernaryCounter_HostIsa.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace TernaryCounter;
using namespace TernaryCounter::Perf;

const char* const usage =
    "usage: ternary-counter-perf [--shape OUTxINxM]... [--shapes llm|inference|transformer]\n"
    "                            [--workspace-mib N]\n"
    "                            [--team-size N] [--precision fp32|int8] [--repeat N]\n"
    "                            [--json FILE] [--kernels [--peak-tops N]] [--help]\n"
    "  --shape OUTxINxM  a layer of OUT x IN weights updated from M samples (repeatable;\n"
    "                    IN a multiple of 4). Default: 1024x1024x8192 2048x2048x4096\n"
    "                    4096x4096x4096 4096x4096x16384 11008x4096x4096 4096x11008x4096\n"
    "                    4096x4096x256 16384x16384x16 on a GPU, 1024x1024x4096 512x2048x2048\n"
    "                    1024x1024x16 on a host backend\n"
    "  --shapes llm      131072x32768x64 and 65536x40000x256 (large layers, few samples per\n"
    "                    step; about 45 GB of device memory), with any --shape given\n"
    "  --shapes inference 16384x16384x1 16384x16384x4 4096x4096x1 11008x4096x1\n"
    "                    4096x11008x1 (token-by-token and tiny batches, where forward reads\n"
    "                    each weight once), with any --shape given\n"
    "  --shapes transformer the layers of two transformers at M = batch x context:\n"
    "                    d=512 at 8 x 1024 tokens (qkv 1536x512, out 512x512, mlp up\n"
    "                    2048x512, mlp down 512x2048, M 8192) and d=4096 at 2 x 2048 tokens\n"
    "                    (qkv 12288x4096, out 4096x4096, mlp up 16384x4096, mlp down\n"
    "                    4096x16384, M 4096), with any --shape given\n"
    "  --workspace-mib N update_from_io's workspace budget (default: the library's, see\n"
    "                    from_io_workspace_rows)\n"
    "  --team-size N     threads per row of the update (UpdateParams::team_size; default 0:\n"
    "                    the backend's choice)\n"
    "  --precision P     fp32 (default: SPEC §3) or int8 (the integer path, SPEC §6) for\n"
    "                    forward, backward_input and update_from_io\n"
    "  --repeat N        timed repeats per measurement, N >= 5 (default 7); the median counts\n"
    "  --json FILE       also write the results as JSON to FILE\n"
    "  --kernels         per shape, also one layer step kernel by kernel: each kernel's time\n"
    "                    (fenced, median of the repeats), launches, modelled bytes, GB/s and\n"
    "                    share of the copy bandwidth; the time of the library's calls outside\n"
    "                    its kernels (vendor calls, checks, allocations); the step's launches\n"
    "                    and bytes per activation element M*(in+out)\n"
    "  --peak-tops N     with --kernels: the device's peak tera-ops/s for the precision's\n"
    "                    GEMMs (int8 TOPS or FP32 TFLOP/s), for their share of it (default:\n"
    "                    none shown)\n"
    "  --kokkos-...      Kokkos options (e.g. --kokkos-num-threads=2) pass through to Kokkos\n";

constexpr bool on_gpu = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;
constexpr std::int64_t max_dimension = std::int64_t(1) << 30;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Shape {
  std::int64_t out, in, m;
};

/// The four products of a transformer block (qkv, attention out, MLP up, MLP down) as
/// out x in x M, for a d=512 model at batch 8 x context 1024 and a d=4096 model at batch 2 x
/// context 2048 (MLP width 4d).
const Shape transformer_shapes[] = {
    {3 * 512, 512, 8192},   {512, 512, 8192},   {4 * 512, 512, 8192},   {512, 4 * 512, 8192},
    {3 * 4096, 4096, 4096}, {4096, 4096, 4096}, {4 * 4096, 4096, 4096}, {4096, 4 * 4096, 4096}};

struct Options {
  std::vector<Shape> shapes;
  int repeat = 7;
  std::int64_t workspace_mib = 0;  ///< 0: the library's default budget
  int team_size = 0;               ///< UpdateParams::team_size
  Precision precision = Precision::fp32;
  std::string json;
  bool kernels = false;    ///< --kernels: one layer step broken into its kernels
  double peak_tops = 0.0;  ///< --peak-tops: the GEMMs' peak, tera-ops/s (0: unknown)
  bool help = false;
};

std::int64_t parse_positive(const std::string& text, const std::string& what) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value <= 0) {
    throw UsageError(what + " must be a positive integer, got '" + text + "'");
  }
  return value;
}

Shape parse_shape(const std::string& text) {
  std::vector<std::string> parts(1);
  for (const char c : text) {
    if (c == 'x' || c == 'X') {
      parts.emplace_back();
    } else {
      parts.back() += c;
    }
  }
  if (parts.size() != 3) {
    throw UsageError("--shape expects OUTxINxM (e.g. 1024x1024x4096), got '" + text + "'");
  }
  const Shape shape{parse_positive(parts[0], "--shape " + text + ": OUT"),
                    parse_positive(parts[1], "--shape " + text + ": IN"),
                    parse_positive(parts[2], "--shape " + text + ": M")};
  if (shape.in % 4 != 0) {
    throw UsageError("--shape " + text + ": IN = " + parts[1] +
                     " must be a multiple of 4 (4 codes pack into 3 bytes)");
  }
  if (shape.out > max_dimension || shape.in > max_dimension || shape.m > max_dimension) {
    throw UsageError("--shape " + text + ": each dimension must be at most 2^30");
  }
  return shape;
}

Options parse_options(int argc, char** argv) {
  Options options;
  for (int k = 1; k < argc; ++k) {
    std::string arg = argv[k], value;
    if (arg.rfind("--kokkos-", 0) == 0) continue;  // Kokkos::initialize reads these
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      continue;
    }
    if (arg == "--kernels") {
      options.kernels = true;
      continue;
    }
    if (const auto eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (arg == "--shape" || arg == "--shapes" || arg == "--workspace-mib" ||
               arg == "--team-size" || arg == "--repeat" || arg == "--json" ||
               arg == "--precision" || arg == "--peak-tops") {
      if (k + 1 >= argc) throw UsageError(arg + " needs a value (see --help)");
      value = argv[++k];
    }
    if (arg == "--shape") {
      options.shapes.push_back(parse_shape(value));
    } else if (arg == "--shapes") {
      if (value == "llm") {
        options.shapes.push_back({131072, 32768, 64});
        options.shapes.push_back({65536, 40000, 256});
      } else if (value == "inference") {
        for (const Shape shape :
             {Shape{16384, 16384, 1}, Shape{16384, 16384, 4}, Shape{4096, 4096, 1},
              Shape{11008, 4096, 1}, Shape{4096, 11008, 1}}) {
          options.shapes.push_back(shape);
        }
      } else if (value == "transformer") {
        for (const Shape shape : transformer_shapes) options.shapes.push_back(shape);
      } else {
        throw UsageError("--shapes knows 'llm', 'inference' and 'transformer', got '" + value +
                         "'");
      }
    } else if (arg == "--workspace-mib") {
      options.workspace_mib = parse_positive(value, "--workspace-mib");
    } else if (arg == "--team-size") {
      const std::int64_t n = parse_positive(value, "--team-size");
      if (n > 1024) throw UsageError("--team-size must be at most 1024, got " + value);
      options.team_size = int(n);
    } else if (arg == "--repeat") {
      const std::int64_t n = parse_positive(value, "--repeat");
      if (n < 5 || n > 1000000) {
        throw UsageError(
            "--repeat must be in [5, 1000000] (the report is a median of >= 5 "
            "repeats), got " +
            value);
      }
      options.repeat = int(n);
    } else if (arg == "--precision") {
      if (value == "fp32") {
        options.precision = Precision::fp32;
      } else if (value == "int8") {
        options.precision = Precision::int8;
      } else {
        throw UsageError("--precision must be fp32 or int8, got '" + value + "'");
      }
    } else if (arg == "--peak-tops") {
      char* end = nullptr;
      const double tops = std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size() || !(tops > 0.0) ||
          !std::isfinite(tops)) {
        throw UsageError("--peak-tops must be a positive number, got '" + value + "'");
      }
      options.peak_tops = tops;
    } else if (arg == "--json") {
      if (value.empty()) throw UsageError("--json needs a file name");
      options.json = value;
    } else {
      throw UsageError("unknown argument '" + std::string(argv[k]) + "' (see --help)");
    }
  }
  if (options.peak_tops > 0 && !options.kernels) {
    throw UsageError("--peak-tops is a figure of the --kernels report: give --kernels too");
  }
  if (options.shapes.empty()) {
    if (on_gpu) {
      options.shapes = {{1024, 1024, 8192},  {2048, 2048, 4096},  {4096, 4096, 4096},
                        {4096, 4096, 16384}, {11008, 4096, 4096}, {4096, 11008, 4096},
                        {4096, 4096, 256},   {16384, 16384, 16}};
    } else {
      options.shapes = {{1024, 1024, 4096}, {512, 2048, 2048}, {1024, 1024, 16}};
    }
  }
  return options;
}

/// Device-to-device deep_copy bandwidth, bytes read + written: the roofline the dense update,
/// a pure streaming kernel, is compared with.
struct CopyBandwidth {
  std::int64_t bytes = 0;  ///< size of one buffer
  Samples samples;
  double gbps() const { return 2.0 * double(bytes) / (samples.median() * 1e-3) / 1e9; }
};

CopyBandwidth measure_copy(const ExecSpace& space, int repeats) {
  CopyBandwidth copy;
  copy.bytes = on_gpu ? std::int64_t(1) << 30 : std::int64_t(256) << 20;
  const std::int64_t n = copy.bytes / std::int64_t(sizeof(float));
  // Initialized allocations: every page is touched before the timing.
  const Kokkos::View<float*, MemSpace> src(
      Kokkos::view_alloc(space, "TernaryCounter::Perf::copy.src"), n);
  const Kokkos::View<float*, MemSpace> dst(
      Kokkos::view_alloc(space, "TernaryCounter::Perf::copy.dst"), n);
  copy.samples = time_repeats(
      repeats, [] {}, [&] { Kokkos::deep_copy(space, dst, src); });
  return copy;
}

/// Codes that differ between two states of one shape (a consistency check of the two paths:
/// their gradients are summed in different orders, so a few codes may round differently).
std::int64_t count_code_mismatches(const ExecSpace& space,
                                   const PackedState<MemSpace>::codes_view& a,
                                   const PackedState<MemSpace>::codes_view& b) {
  std::int64_t mismatches = 0;
  Kokkos::parallel_reduce(
      "TernaryCounter::Perf::count_code_mismatches",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>(
          space, {0, 0}, {std::int64_t(a.extent(0)), std::int64_t(a.extent(1)) / bytes_per_group}),
      KOKKOS_LAMBDA(std::int64_t o, std::int64_t g, std::int64_t & count) {
        const std::uint32_t wa = load_group(&a(o, bytes_per_group * g));
        const std::uint32_t wb = load_group(&b(o, bytes_per_group * g));
        for (int lane = 0; lane < codes_per_group; ++lane) {
          count += group_code(wa, lane) != group_code(wb, lane) ? 1 : 0;
        }
      },
      mismatches);
  return mismatches;
}

struct ShapeResult {
  Shape shape{};
  Samples from_io, vendor_path, dense, vendor_gemm;
  Samples forward, backward_input, layer_step;                       ///< the ternary layer
  Samples vendor_forward, vendor_backward_input, vendor_layer_step;  ///< a dense FP32 layer
  Samples vendor_int8_gemm;        ///< the vendor's int8 GEMM of forward's shape (where available)
  Samples vendor_bf16_layer_step;  ///< three BF16 GEMMs + the dense update (where available)
  Samples bf16_io_layer_step;      ///< the ternary layer's step on bf16 x, grad_out, y, grad_x
  Precision precision = Precision::fp32;
  std::int64_t workspace_rows = 0;
  int team_size = 0;  ///< UpdateParams::team_size of the run (0: the backend's choice)
  std::int64_t code_mismatches = 0;
  std::int64_t skipped_rows = 0;
  KernelBreakdown kernels;  ///< --kernels: one layer step, kernel by kernel

  double flops() const { return 2.0 * double(shape.out) * double(shape.in) * double(shape.m); }
  double tflops(const Samples& s) const { return flops() / (s.median() * 1e-3) / 1e12; }
  std::int64_t from_io_extra_bytes() const { return workspace_rows * shape.in * 4; }
  std::int64_t vendor_extra_bytes() const { return shape.out * shape.in * 4; }
  /// Gradient read (4 B/weight), packed codes read and written (0.75 + 0.75 B/weight), and
  /// scale and v read and written (16 B/row).
  std::int64_t dense_bytes() const {
    return shape.out * shape.in * 4 + 2 * shape.out * (shape.in / 4 * 3) + 16 * shape.out;
  }
  double dense_gbps() const { return double(dense_bytes()) / (dense.median() * 1e-3) / 1e9; }
  double ratio() const { return from_io.median() / vendor_path.median(); }
  /// The products over the vendor's same operation (x W^T and grad_out W).
  double forward_ratio() const { return forward.median() / vendor_forward.median(); }
  double backward_input_ratio() const {
    return backward_input.median() / vendor_backward_input.median();
  }
  double forward_over_int8() const {
    return vendor_int8_gemm.ms.empty() ? 0.0 : forward.median() / vendor_int8_gemm.median();
  }
  double layer_step_ratio() const { return layer_step.median() / vendor_layer_step.median(); }
  double layer_step_over_bf16() const {
    return vendor_bf16_layer_step.ms.empty()
               ? 0.0
               : layer_step.median() / vendor_bf16_layer_step.median();
  }
  /// The step on bf16 data over the BF16 layer's step: the comparison of like with like.
  double bf16_io_step_over_bf16() const {
    return vendor_bf16_layer_step.ms.empty()
               ? 0.0
               : bf16_io_layer_step.median() / vendor_bf16_layer_step.median();
  }
};

ShapeResult run_shape(const ExecSpace& space, const VendorGemm& vendor, const Shape& shape,
                      const Options& options) {
  const int repeats = options.repeat;
  ShapeResult r;
  r.shape = shape;
  const auto alloc = [&](const char* label) {
    return Kokkos::view_alloc(space, std::string("TernaryCounter::Perf::") + label,
                              Kokkos::WithoutInitializing);
  };
  const Matrix x(alloc("x"), shape.m, shape.in);
  const Matrix grad_out(alloc("grad_out"), shape.m, shape.out);
  const Matrix grad_w(alloc("grad_w"), shape.out, shape.in);
  const Matrix y(alloc("y"), shape.m, shape.out);
  const Matrix grad_x(alloc("grad_x"), shape.m, shape.in);
  const Matrix dense_w(alloc("dense_w"), shape.out, shape.in);  // the FP32 layer's weights
  r.team_size = options.team_size;
  r.workspace_rows =
      from_io_workspace_rows<ExecSpace>(shape.out, shape.in, options.workspace_mib << 20);
  const Matrix workspace(alloc("workspace"), r.workspace_rows, shape.in);
  fill_normal(space, x, 1, 1.0f);
  fill_normal(space, grad_out, 2, 1e-3f);
  fill_normal(space, dense_w, 3, 1e-2f);

  UpdateParams params;
  params.lr = 0.05;  // the values the measurements in docs/PERFORMANCE.md were taken with
  params.lr_scale = 2e-4;
  params.rms_beta = 0.9;
  params.team_size = options.team_size;
  r.precision = options.precision;
  PackedState<MemSpace> state("TernaryCounter::Perf::state", shape.out, shape.in, params.C);
  // One step first so the timed steps start from a state with nonzero counters and scales.
  params.seed = 1;
  vendor.grad_w(x, grad_out, grad_w);
  r.skipped_rows += update(space, state, grad_w, params).skipped_rows;
  params.seed = 2;
  const ProductOptions product{options.precision, params.seed};
  // Every timed repeat starts from this same state; restoring it is outside the timed region.
  const PackedState<MemSpace> saved = create_mirror_and_copy(space, state);
  const auto restore = [&] { TernaryCounter::deep_copy(state, saved); };
  // The timed calls are the asynchronous overloads, as an application's training loop would
  // call them; time_repeats fences after each. The count of each measurement's last call is
  // read back outside the timed region.
  const SkippedRowsView<MemSpace> skipped("TernaryCounter::Perf::skipped_rows");
  const auto add_skipped = [&] {
    std::int64_t n = 0;
    Kokkos::deep_copy(n, skipped);
    r.skipped_rows += n;
  };

  vendor.settle();
  r.from_io = time_repeats(repeats, restore, [&] {
    update_from_io(space, state, x, grad_out, params, workspace, skipped, options.precision);
  });
  add_skipped();
  r.vendor_path = time_repeats(repeats, restore, [&] {
    vendor.grad_w(x, grad_out, grad_w);
    update(space, state, grad_w, params, skipped);
  });
  add_skipped();
  // grad_w now holds this shape's gradient: the dense update alone reads it.
  vendor.settle();
  r.dense = time_repeats(repeats, restore, [&] { update(space, state, grad_w, params, skipped); });
  add_skipped();
  r.vendor_gemm = time_repeats(
      repeats, [] {}, [&] { vendor.grad_w(x, grad_out, grad_w); });

  // The layer's products read the weights only: no restore needed between repeats.
  vendor.settle();
  r.forward = time_repeats(
      repeats, [] {}, [&] { forward(space, state, x, y, product); });
  r.backward_input = time_repeats(
      repeats, [] {}, [&] { backward_input(space, state, grad_out, grad_x, product); });
  r.layer_step = time_repeats(repeats, restore, [&] {
    forward(space, state, x, y, product);
    backward_input(space, state, grad_out, grad_x, product);
    update_from_io(space, state, x, grad_out, params, workspace, skipped, options.precision);
  });
  add_skipped();
  {
    // The same step on bf16 tensors in and out, as a bf16 training script calls it.
    const Bf16Matrix x16 = bf16_copy(space, x, "TernaryCounter::Perf::bf16_x");
    const Bf16Matrix grad_out16 = bf16_copy(space, grad_out, "TernaryCounter::Perf::bf16_grad_out");
    const Bf16Matrix y16(alloc("bf16_y"), shape.m, shape.out);
    const Bf16Matrix grad_x16(alloc("bf16_grad_x"), shape.m, shape.in);
    r.bf16_io_layer_step = time_repeats(repeats, restore, [&] {
      forward(space, state, x16, y16, product);
      backward_input(space, state, grad_out16, grad_x16, product);
      update_from_io(space, state, x16, grad_out16, params, workspace, skipped, options.precision);
    });
    add_skipped();
  }
  r.vendor_forward = time_repeats(
      repeats, [] {}, [&] { vendor.forward(x, dense_w, y); });
  r.vendor_backward_input = time_repeats(
      repeats, [] {}, [&] { vendor.backward_input(grad_out, dense_w, grad_x); });
  // A dense FP32 layer with this update as its optimizer (the counter state stands in for the
  // optimizer state; the three SGEMMs are what a dense layer costs).
  r.vendor_layer_step = time_repeats(repeats, restore, [&] {
    vendor.forward(x, dense_w, y);
    vendor.backward_input(grad_out, dense_w, grad_x);
    vendor.grad_w(x, grad_out, grad_w);
    update(space, state, grad_w, params, skipped);
  });
  add_skipped();
  if (VendorBf16Layer::available()) {
    // The same layer on BF16 tensor cores, with this update as its optimizer.
    const VendorBf16Layer bf16(space, x, grad_out, dense_w);
    r.vendor_bf16_layer_step = time_repeats(repeats, restore, [&] {
      bf16.step(grad_w);
      update(space, state, grad_w, params, skipped);
    });
    add_skipped();
  }
  if (options.precision == Precision::int8 && VendorInt8Gemm::available()) {
    // int8 operands of forward's shape (their values do not change the time of an integer GEMM).
    const Int8Matrix a(alloc("int8_a"), shape.m, shape.in), b(alloc("int8_b"), shape.out, shape.in);
    const Int32Matrix c(alloc("int32_c"), shape.m, shape.out);
    Kokkos::parallel_for(
        "TernaryCounter::Perf::int8_operands",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
            space, 0, std::max(shape.m, shape.out) * shape.in),
        KOKKOS_LAMBDA(std::int64_t k) {
          const std::int64_t in = a.extent(1);
          if (k < std::int64_t(a.size())) {
            a(k / in, k % in) = std::int8_t(int(hash_u32(std::uint32_t(k)) % 255) - 127);
          }
          if (k < std::int64_t(b.size())) {
            b(k / in, k % in) = std::int8_t(int(hash_u32(std::uint32_t(k) ^ 0x55u) % 3) - 1);
          }
        });
    r.vendor_int8_gemm = time_repeats(
        repeats, [] {}, [&] { VendorInt8Gemm::gemm_nt(space, a, b, c); });
  }

  // One step of each path from the saved state: they should agree on nearly every code.
  restore();
  update_from_io(space, state, x, grad_out, params, workspace, options.precision);
  const PackedState<MemSpace> from_io_state = create_mirror_and_copy(space, state);
  restore();
  vendor.grad_w(x, grad_out, grad_w);
  update(space, state, grad_w, params);
  r.code_mismatches = count_code_mismatches(space, from_io_state.codes, state.codes);

  if (options.kernels) {
    // The layer step again, each kernel fenced and timed on its own (PerfKernelReport.hpp).
    r.kernels = record_kernels(repeats, restore, [&] {
      forward(space, state, x, y, product);
      backward_input(space, state, grad_out, grad_x, product);
      update_from_io(space, state, x, grad_out, params, workspace, skipped, options.precision);
    });
    add_skipped();
  }
  return r;
}

std::string shape_name(const Shape& s) {
  return std::to_string(s.out) + "x" + std::to_string(s.in) + "x" + std::to_string(s.m);
}

std::string format(const char* fmt, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, a);
  return buf;
}

void print_table(const std::vector<ShapeResult>& results, const CopyBandwidth& copy) {
  std::printf("\n%6s %6s %6s | %10s %7s | %10s %7s | %9s %7s %6s | %21s | %6s\n", "out", "in", "M",
              "from_io ms", "TFLOP/s", "vendor ms", "TFLOP/s", "dense ms", "GB/s", "%copy",
              "extra MiB from_io/vnd", "ratio");
  for (const ShapeResult& r : results) {
    const std::string extra = format("%.1f", double(r.from_io_extra_bytes()) / (1 << 20)) + " / " +
                              format("%.1f", double(r.vendor_extra_bytes()) / (1 << 20));
    std::printf(
        "%6lld %6lld %6lld | %10.3f %7.4f | %10.3f %7.4f | %9.3f %7.2f %5.1f%% | %21s | %6.2f\n",
        (long long)r.shape.out, (long long)r.shape.in, (long long)r.shape.m, r.from_io.median(),
        r.tflops(r.from_io), r.vendor_path.median(), r.tflops(r.vendor_path), r.dense.median(),
        r.dense_gbps(), 100.0 * r.dense_gbps() / copy.gbps(), extra.c_str(), r.ratio());
  }
  std::printf(
      "(ms: median; TFLOP/s: 2*out*in*M / time; vendor = vendor SGEMM + dense update; GB/s of the "
      "dense update, %%copy of the %.1f GB/s deep_copy; ratio = from_io ms / vendor ms)\n",
      copy.gbps());

  std::printf(
      "\n%6s %6s %6s | %10s %10s | %10s %6s | %10s %6s | %9s %9s %6s | %9s %6s | %9s %6s | %9s "
      "%6s\n",
      "out", "in", "M", "sgemm fwd", "sgemm bwd", "forward ms", "ratio", "bwd_in ms", "ratio",
      "step ms", "dense ms", "ratio", "int8 gemm", "fwd/i8", "bf16 step", "/bf16", "bf16io ms",
      "/bf16");
  for (const ShapeResult& r : results) {
    const bool int8_peer = !r.vendor_int8_gemm.ms.empty();
    const bool bf16_peer = !r.vendor_bf16_layer_step.ms.empty();
    std::printf(
        "%6lld %6lld %6lld | %10.3f %10.3f | %10.3f %6.2f | %10.3f %6.2f | %9.3f %9.3f %6.2f | "
        "%9s %6s | %9s %6s | %9.3f %6s\n",
        (long long)r.shape.out, (long long)r.shape.in, (long long)r.shape.m,
        r.vendor_forward.median(), r.vendor_backward_input.median(), r.forward.median(),
        r.forward_ratio(), r.backward_input.median(), r.backward_input_ratio(),
        r.layer_step.median(), r.vendor_layer_step.median(), r.layer_step_ratio(),
        int8_peer ? format("%.3f", r.vendor_int8_gemm.median()).c_str() : "-",
        int8_peer ? format("%.2f", r.forward_over_int8()).c_str() : "-",
        bf16_peer ? format("%.3f", r.vendor_bf16_layer_step.median()).c_str() : "-",
        bf16_peer ? format("%.2f", r.layer_step_over_bf16()).c_str() : "-",
        r.bf16_io_layer_step.median(),
        bf16_peer ? format("%.2f", r.bf16_io_step_over_bf16()).c_str() : "-");
  }
  std::printf(
      "(layer, precision %s: forward and backward_input ratios over the vendor's same FP32 "
      "product, sgemm fwd = x W^T, sgemm bwd = grad_out W; step = forward + backward_input + "
      "update_from_io, dense = three vendor SGEMMs + the dense update; int8 gemm = the vendor's "
      "int8 GEMM of forward's shape, fwd/i8 = forward ms over it; bf16 step = three BF16 "
      "tensor-core GEMMs + the dense update, /bf16 = step ms over it; bf16io = the step on bf16 x, "
      "grad_out, y and grad_x, /bf16 = bf16io ms over bf16 step)\n",
      results.empty() ? "fp32" : precision_name(results.front().precision));
}

/// One row of the kernel report with what the byte model and the run's copy bandwidth make of
/// it; NaN where unknown.
struct KernelFigures {
  const KernelRow* row = nullptr;
  double ms = 0;
  std::int64_t launches = 0;
  double bytes = NAN, gbps = NAN, fraction_of_copy = NAN, ops = NAN, tops = NAN,
         peak_fraction = NAN;
};

/// The step's rows and totals as the report prints and records them.
struct KernelSummary {
  std::vector<KernelFigures> rows;
  double step_ms = 0;      ///< the recorded step (callbacks and fences included), median
  double rows_sum_ms = 0;  ///< the sum of the rows' medians
  double kernels_ms = 0;   ///< of which Kokkos kernels, copies and vendor calls
  std::int64_t kokkos_launches = 0, vendor_calls = 0, copies = 0, fences = 0;
  double model_bytes = 0;       ///< over the rows the model knows
  std::int64_t unmodelled = 0;  ///< kernel, copy and vendor rows the model does not know
  double activation_elements = 0;
  double bytes_per_activation_element() const { return model_bytes / activation_elements; }
};

KernelSummary summarize_kernels(const ShapeResult& r, const CopyBandwidth& copy,
                                const Options& options) {
  KernelSummary s;
  LayerShape layer;
  layer.out = r.shape.out;
  layer.in = r.shape.in;
  layer.m = r.shape.m;
  layer.precision = r.precision;
  layer.host = !on_gpu;
  layer.row_update_source = row_update_source(r.kernels.rows, r.precision);
  s.step_ms = r.kernels.body_ms.median();
  for (const KernelRow& row : r.kernels.rows) {
    KernelFigures f;
    f.row = &row;
    f.ms = row.ms.median();
    f.launches = row.median_launches();
    s.rows_sum_ms += f.ms;
    const bool work = row.kind == KernelRowKind::kernel || row.kind == KernelRowKind::copy ||
                      row.kind == KernelRowKind::vendor;
    if (work) {
      s.kernels_ms += f.ms;
      const std::optional<KernelCost> cost = kernel_cost(row, layer, f.launches);
      if (cost) {
        f.bytes = cost->bytes;
        s.model_bytes += cost->bytes;
        f.gbps = cost->bytes / (f.ms * 1e-3) / 1e9;
        f.fraction_of_copy = f.gbps / copy.gbps();
        if (cost->ops > 0) {
          f.ops = cost->ops;
          f.tops = cost->ops / (f.ms * 1e-3) / 1e12;
          if (options.peak_tops > 0) f.peak_fraction = f.tops / options.peak_tops;
        }
      } else {
        ++s.unmodelled;
      }
    }
    s.rows.push_back(f);
  }
  s.kokkos_launches = r.kernels.launches(KernelRowKind::kernel);
  s.vendor_calls = r.kernels.launches(KernelRowKind::vendor);
  s.copies = r.kernels.launches(KernelRowKind::copy);
  for (const auto& [name, n] : r.kernels.fences) s.fences += n;
  s.activation_elements = double(r.shape.m) * double(r.shape.in + r.shape.out);
  return s;
}

/// "-" for an unknown figure.
std::string figure(const char* fmt, double value) {
  return std::isfinite(value) ? format(fmt, value) : "-";
}

void print_kernel_report(const ShapeResult& r, const CopyBandwidth& copy, const Options& options) {
  const KernelSummary s = summarize_kernels(r, copy, options);
  std::printf(
      "\nkernels of one layer step, %s, %s (forward + backward_input + update_from_io; median of "
      "%d repeats, a fence and a timestamp at each kernel's, copy's and region's begin and end):\n",
      shape_name(r.shape).c_str(), precision_name(r.precision), options.repeat);
  std::printf("%9s %6s %8s %10s %8s %6s %7s %6s  %s\n", "ms", "%step", "launches", "model MB",
              "GB/s", "%copy", r.precision == Precision::int8 ? "TOPS" : "TFLOP/s", "%peak", "row");
  for (const KernelFigures& f : s.rows) {
    const KernelRow& row = *f.row;
    std::string what = row.name;
    if (row.kind == KernelRowKind::other) what = "vendor / other (inside " + row.region + ")";
    if (row.kind == KernelRowKind::vendor)
      what = "vendor call " + row.name + " (inside " + row.region + ")";
    const bool counted = row.kind != KernelRowKind::other && row.kind != KernelRowKind::outside;
    std::printf("%9.4f %5.1f%% %8s %10s %8s %6s %7s %6s  %s\n", f.ms, 100.0 * f.ms / s.step_ms,
                counted ? std::to_string(f.launches).c_str() : "-",
                figure("%.3f", f.bytes / 1e6).c_str(), figure("%.1f", f.gbps).c_str(),
                figure("%.1f%%", 100.0 * f.fraction_of_copy).c_str(),
                figure("%.3f", f.tops).c_str(), figure("%.1f%%", 100.0 * f.peak_fraction).c_str(),
                what.c_str());
  }
  std::printf(
      "%9.4f %5.1f%%  the rows' sum; the recorded step %.4f ms, %.4f ms without the callbacks "
      "(layer step above); kernels, copies and vendor calls %.4f ms\n",
      s.rows_sum_ms, 100.0 * s.rows_sum_ms / s.step_ms, s.step_ms, r.layer_step.median(),
      s.kernels_ms);
  std::string fence_names;
  for (const auto& [name, n] : r.kernels.fences) {
    fence_names += (fence_names.empty() ? "" : ", ") + name + " x" + std::to_string(n);
  }
  std::printf(
      "launches per layer step: %lld = %lld Kokkos kernels + %lld vendor calls (regions "
      "TernaryCounter::vendor_int8_gemm) + %lld deep copies; fences the step asks for: "
      "%lld%s%s%s\n",
      (long long)(s.kokkos_launches + s.vendor_calls + s.copies), (long long)s.kokkos_launches,
      (long long)s.vendor_calls, (long long)s.copies, (long long)s.fences,
      fence_names.empty() ? "" : " (", fence_names.c_str(), fence_names.empty() ? "" : ")");
  std::printf(
      "modelled bytes per layer step: %.3f MB%s over M*(in+out) = %.0f activation elements: %.2f "
      "bytes per activation element (model: PerfKernelBytes.hpp; GB/s = modelled bytes / time, "
      "%%copy of the %.1f GB/s deep_copy%s)\n",
      s.model_bytes / 1e6,
      s.unmodelled ? (" (" + std::to_string(s.unmodelled) + " rows unmodelled, left out)").c_str()
                   : "",
      s.activation_elements, s.bytes_per_activation_element(), copy.gbps(),
      options.peak_tops > 0
          ? (", %peak of --peak-tops " + format("%g", options.peak_tops) + " tera-ops/s").c_str()
          : "; no --peak-tops, no %peak");
  std::fflush(stdout);
}

/// The kernel report of one shape as a JSON object (null figures where unknown).
std::string kernel_report_json(const ShapeResult& r, const CopyBandwidth& copy,
                               const Options& options) {
  const KernelSummary s = summarize_kernels(r, copy, options);
  std::string rows = "[";
  for (std::size_t k = 0; k < s.rows.size(); ++k) {
    const KernelFigures& f = s.rows[k];
    JsonObject o;
    o.str("kind", kernel_row_kind_name(f.row->kind))
        .str("name", f.row->name)
        .str("region", f.row->region)
        .integer("launches", f.launches)
        .num("ms", f.ms)
        .num("model_bytes", f.bytes)
        .num("gbps", f.gbps)
        .num("fraction_of_copy", f.fraction_of_copy)
        .num("ops", f.ops)
        .num("tops", f.tops)
        .num("fraction_of_peak", f.peak_fraction)
        .raw("ms_samples", json_numbers(f.row->ms.ms));
    rows += (k ? ",\n        " : "\n        ") + o.text("        ");
  }
  rows += "\n      ]";
  JsonObject fences;
  for (const auto& [name, n] : r.kernels.fences) fences.integer(name, n);
  JsonObject o;
  o.num("step_ms", s.step_ms)
      .raw("step_ms_samples", json_numbers(r.kernels.body_ms.ms))
      .num("rows_sum_ms", s.rows_sum_ms)
      .num("kernels_ms", s.kernels_ms)
      .num("uninstrumented_step_ms", r.layer_step.median())
      .integer("launches", s.kokkos_launches + s.vendor_calls + s.copies)
      .integer("kokkos_launches", s.kokkos_launches)
      .integer("vendor_calls", s.vendor_calls)
      .integer("deep_copies", s.copies)
      .integer("fences", s.fences)
      .raw("fences_by_name", fences.text("      "))
      .num("model_bytes", s.model_bytes)
      .integer("unmodelled_rows", s.unmodelled)
      .num("activation_elements", s.activation_elements)
      .num("bytes_per_activation_element", s.bytes_per_activation_element())
      .num("peak_tops", options.peak_tops > 0 ? options.peak_tops : NAN)
      .raw("rows", rows);
  return o.text("      ");
}

std::string record_json(const ShapeResult& r, const CopyBandwidth& copy, const Options& options) {
  const double weights = double(r.shape.out) * double(r.shape.in);
  JsonObject o;
  o.integer("out", r.shape.out)
      .integer("in", r.shape.in)
      .integer("M", r.shape.m)
      .str("backend", ExecSpace::name())
      .str("git_revision", Perf::git_revision)
      .str("git_diff_sha256", Perf::git_diff_sha256)
      .str("precision", precision_name(r.precision))
      .num("from_io_ms", r.from_io.median())
      .num("vendor_path_ms", r.vendor_path.median())
      .num("dense_update_ms", r.dense.median())
      .num("vendor_gemm_ms", r.vendor_gemm.median())
      .num("ratio", r.ratio())
      .num("from_io_tflops", r.tflops(r.from_io))
      .num("vendor_path_tflops", r.tflops(r.vendor_path))
      .num("vendor_gemm_tflops", r.tflops(r.vendor_gemm))
      .integer("dense_update_bytes", r.dense_bytes())
      .num("dense_update_gbps", r.dense_gbps())
      .num("copy_gbps", copy.gbps())
      .num("dense_update_fraction_of_copy", r.dense_gbps() / copy.gbps())
      .integer("from_io_extra_bytes", r.from_io_extra_bytes())
      .integer("from_io_workspace_rows", r.workspace_rows)
      .integer("update_team_size", r.team_size)
      .integer("vendor_path_extra_bytes", r.vendor_extra_bytes())
      .integer("code_mismatches_from_io_vs_vendor", r.code_mismatches)
      .num("code_mismatch_fraction", double(r.code_mismatches) / weights)
      .num("forward_ms", r.forward.median())
      .num("backward_input_ms", r.backward_input.median())
      .num("layer_step_ms", r.layer_step.median())
      .num("vendor_forward_ms", r.vendor_forward.median())
      .num("vendor_backward_input_ms", r.vendor_backward_input.median())
      .num("vendor_layer_step_ms", r.vendor_layer_step.median())
      .num("forward_ratio", r.forward_ratio())
      .num("backward_input_ratio", r.backward_input_ratio())
      .num("layer_step_ratio", r.layer_step_ratio())
      .num("vendor_int8_gemm_ms",
           r.vendor_int8_gemm.ms.empty() ? -1.0 : r.vendor_int8_gemm.median())
      .num("forward_over_vendor_int8_gemm", r.forward_over_int8())
      .num("vendor_bf16_layer_step_ms",
           r.vendor_bf16_layer_step.ms.empty() ? -1.0 : r.vendor_bf16_layer_step.median())
      .num("layer_step_over_bf16", r.layer_step_over_bf16())
      .num("bf16_io_layer_step_ms", r.bf16_io_layer_step.median())
      .num("bf16_io_step_over_bf16", r.bf16_io_step_over_bf16())
      .num("forward_tflops", r.tflops(r.forward))
      .num("backward_input_tflops", r.tflops(r.backward_input))
      .integer("skipped_rows", r.skipped_rows)
      .raw("from_io_ms_samples", json_numbers(r.from_io.ms))
      .raw("vendor_path_ms_samples", json_numbers(r.vendor_path.ms))
      .raw("dense_update_ms_samples", json_numbers(r.dense.ms))
      .raw("vendor_gemm_ms_samples", json_numbers(r.vendor_gemm.ms))
      .raw("forward_ms_samples", json_numbers(r.forward.ms))
      .raw("backward_input_ms_samples", json_numbers(r.backward_input.ms))
      .raw("layer_step_ms_samples", json_numbers(r.layer_step.ms))
      .raw("vendor_layer_step_ms_samples", json_numbers(r.vendor_layer_step.ms))
      .raw("vendor_forward_ms_samples", json_numbers(r.vendor_forward.ms))
      .raw("vendor_backward_input_ms_samples", json_numbers(r.vendor_backward_input.ms))
      .raw("vendor_int8_gemm_ms_samples", json_numbers(r.vendor_int8_gemm.ms))
      .raw("vendor_bf16_layer_step_ms_samples", json_numbers(r.vendor_bf16_layer_step.ms))
      .raw("bf16_io_layer_step_ms_samples", json_numbers(r.bf16_io_layer_step.ms));
  if (options.kernels) o.raw("kernel_report", kernel_report_json(r, copy, options));
  return o.text("    ");
}

/// The host kernels' instruction sets (TERNARYCOUNTER_HOST_ISA, as host_isa() decided).
std::string host_isa_description() {
  const char* forced = std::getenv("TERNARYCOUNTER_HOST_ISA");
  const TernaryCounter::Impl::HostIsa& isa = TernaryCounter::Impl::host_isa();
  return std::string(forced ? forced : "default") + " (avx2_fma " + (isa.avx2_fma ? "yes" : "no") +
         ", avx512 tiles " + (isa.avx512_tiles ? "yes" : "no") + ", avx512 quantize " +
         (isa.avx512_quantize ? "yes" : "no") + ", vbmi " + (isa.vbmi ? "yes" : "no") + ")";
}

/// The int8 products' engine on this backend: the host's (host_isa()) or the device's.
std::string int8_engine_name() {
  if (!Kokkos::SpaceAccessibility<Kokkos::HostSpace, ExecSpace::memory_space>::accessible) {
    return "device";
  }
  return TernaryCounter::Impl::host_int8_engine_name(TernaryCounter::Impl::host_isa().int8_engine);
}

int run(const Options& options, std::ofstream& json) {
  const ExecSpace space;
  std::ostringstream configuration;
  Kokkos::print_configuration(configuration, true);

  const VendorGemm vendor(space);
  const double check = self_check_vendor_gemm(space, vendor);
  std::printf("ternary-counter-perf  git %s  backend %s  concurrency %d\n",
              revision_summary().c_str(), ExecSpace::name(), space.concurrency());
  std::printf("vendor GEMM: %s\n", vendor.description().c_str());
  std::printf("precision: %s; vendor int8 GEMM: %s\n", precision_name(options.precision),
              VendorInt8Gemm::description().c_str());
  std::printf("vendor BF16 layer: %s\n", VendorBf16Layer::description().c_str());
  std::printf("host ISA: %s; int8 engine: %s\n", host_isa_description().c_str(),
              int8_engine_name().c_str());
  std::printf(
      "vendor GEMM self-check (37x24x64, its three products vs a double host loop): ok, worst "
      "error %.3f of "
      "the tolerance\n",
      check);
  std::printf(
      "timing: median of %d repeats after a warm-up, Kokkos::fence before and after each; "
      "the state is restored before each repeat, outside the timed region\n",
      options.repeat);

  if (options.kernels && !kernel_report_available()) {
    throw std::runtime_error(
        "--kernels installs Kokkos Tools callbacks of its own: run it without a tool library "
        "(--kokkos-tools-libs, KOKKOS_TOOLS_LIBS)");
  }
  const CopyBandwidth copy = measure_copy(space, options.repeat);
  std::printf("copy bandwidth: deep_copy of %lld MiB, %.3f ms -> %.1f GB/s (read + write)\n",
              (long long)(copy.bytes >> 20), copy.samples.median(), copy.gbps());
  std::fflush(stdout);

  std::vector<ShapeResult> results;
  for (const Shape& shape : options.shapes) {
    results.push_back(run_shape(space, vendor, shape, options));
    const ShapeResult& r = results.back();
    std::printf(
        "%s: from_io %.3f ms, vendor path %.3f ms (sgemm %.3f ms), dense %.3f ms; "
        "codes differing between the paths: %lld of %lld; skipped rows %lld; forward %.3f ms, "
        "backward_input %.3f ms, layer step %.3f ms vs dense FP32 step %.3f ms\n",
        shape_name(shape).c_str(), r.from_io.median(), r.vendor_path.median(),
        r.vendor_gemm.median(), r.dense.median(), (long long)r.code_mismatches,
        (long long)(shape.out * shape.in), (long long)r.skipped_rows, r.forward.median(),
        r.backward_input.median(), r.layer_step.median(), r.vendor_layer_step.median());
    std::fflush(stdout);
    if (options.kernels) print_kernel_report(r, copy, options);
  }
  print_table(results, copy);

  if (json.is_open()) {
    std::string records = "[";
    for (std::size_t k = 0; k < results.size(); ++k) {
      records += (k ? ",\n    " : "\n    ") + record_json(results[k], copy, options);
    }
    records += "\n  ]";
    JsonObject top;
    top.str("program", "ternary-counter-perf")
        .str("git_revision", Perf::git_revision)
        .str("git_diff_sha256", Perf::git_diff_sha256)
        .str("backend", ExecSpace::name())
        .integer("concurrency", space.concurrency())
        .str("vendor_gemm", vendor.description())
        .str("precision", precision_name(options.precision))
        .str("vendor_int8_gemm", VendorInt8Gemm::description())
        .str("vendor_bf16_layer", VendorBf16Layer::description())
        .str("host_isa", host_isa_description())
        .str("int8_engine", int8_engine_name())
        .num("vendor_gemm_self_check_error_fraction", check)
        .integer("repeats", options.repeat)
        .str("timing",
             "median of repeats after one warm-up; Kokkos::fence before and after "
             "each; state restored before each repeat, outside the timed region")
        .integer("copy_bytes", copy.bytes)
        .num("copy_ms", copy.samples.median())
        .num("copy_gbps", copy.gbps())
        .str("kernel_report",
             options.kernels
                 ? "per record: one layer step (forward + backward_input + update_from_io) "
                   "recorded by Kokkos Tools callbacks, a fence and a timestamp at each kernel's, "
                   "deep copy's and region's begin and end; each row's exclusive time per repeat "
                   "and its median; model_bytes from PerfKernelBytes.hpp"
                 : "")
        .str("kokkos_configuration", configuration.str())
        .raw("records", records);
    json << top.text() << "\n";
    json.close();
    if (!json) throw std::runtime_error("writing the --json file failed");
    std::printf("wrote %s\n", options.json.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    options = parse_options(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "ternary-counter-perf: " << e.what() << "\n";
    return 2;
  }
  if (options.help) {
    std::cout << usage;
    return 0;
  }
  std::ofstream json;
  if (!options.json.empty()) {
    json.open(options.json);  // opened first, so a bad path fails before the long run
    if (!json) {
      std::cerr << "ternary-counter-perf: cannot open --json file '" << options.json
                << "' for writing\n";
      return 2;
    }
  }
  Kokkos::ScopeGuard guard(argc, argv);
  try {
    return run(options, json);
  } catch (const std::exception& e) {
    std::cerr << "ternary-counter-perf: error: " << e.what() << "\n";
    return 1;
  }
}
