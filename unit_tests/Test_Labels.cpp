// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Every kernel the library launches carries a label of its own ("TernaryCounter::<call>::<kernel>"
// or "TernaryCounter::<kernel>") and every allocation the "TernaryCounter::" prefix, so that Kokkos
// Tools attribute time and memory to the kernel that spent it. The calls below reach every kernel
// of the backend; the test checks the exact labels each call launches, so a new kernel without a
// label, or one that reuses another kernel's label, fails it.
#include "Test_Helpers.hpp"

#include "engines/TernaryCounter_Capabilities.hpp"
#include "engines/TernaryCounter_HostInt8Gemm.hpp"

#include <TernaryCounter_Linear.hpp>
#include "engines/TernaryCounter_Tiling.hpp"
#include "update/impl/TernaryCounter_FloatGradientRows.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace TernaryCounter::Test {
namespace {

std::vector<std::string> kernels, allocations;

void record_kernel(const char* name, std::uint32_t, std::uint64_t*) {
  kernels.push_back(name);
}
void record_allocation(Kokkos::Profiling::SpaceHandle, const char* name, const void*,
                       std::uint64_t) {
  allocations.push_back(name);
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

/// The library's kernel labels that `call` launches, in order (Kokkos' own kernels, View fills
/// and deep copies, are named by Kokkos and left out).
std::vector<std::string> labels_of(const std::function<void()>& call) {
  kernels.clear();
  call();
  ExecSpace{}.fence();
  std::vector<std::string> library;
  for (const std::string& name : kernels) {
    if (!starts_with(name, "Kokkos::")) library.push_back(name);
  }
  return library;
}

using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, MemSpace>;

Matrix filled(const char* label, std::int64_t rows, std::int64_t cols, float value) {
  Matrix m(label, rows, cols);
  Kokkos::deep_copy(m, value);
  return m;
}

/// The label of an integer product: the hosts' engines add "::avx2", "::vnni" or "::amx" to it.
std::string int8_label(const std::string& product) {
  using Impl::HostInt8::Engine;
  const Engine engine =
      std::is_same_v<MemSpace, Kokkos::HostSpace> ? Impl::HostInt8::engine() : Engine::portable;
  return "TernaryCounter::" + product +
         (engine == Engine::portable ? ""
                                     : std::string("::") + Impl::host_int8_engine_name(engine));
}

constexpr bool on_host = std::is_same_v<MemSpace, Kokkos::HostSpace>;
/// CUDA's integer products run on cuBLAS: the kernels around it decode W in blocks (one block at
/// the test's sizes) and finish the sums in place.
#ifdef KOKKOS_ENABLE_CUDA
constexpr bool vendor_int8_gemm = std::is_same_v<ExecSpace, Kokkos::Cuda>;
#else
constexpr bool vendor_int8_gemm = false;
#endif

/// CUDA sm_80+: products past the few-sample kernels over a layer's `in` of a multiple of 16 run
/// on the tensor-core engine (one kernel: decode, MMAs and epilogue).
bool tensor_cores(std::int64_t in) {
  return Impl::Capabilities<ExecSpace>::tensor_core_int8 &&
         Impl::gpu_int8_gemm() == Impl::GpuInt8Gemm::tensor_cores && in % 16 == 0;
}

/// forward's integer path: a few samples decode codes in registers (hosts with VBMI and VNNI: up to
/// HostInt8::few_samples; GPUs: up to 16 over a depth of a multiple of 16), others a product.
std::vector<std::string> int8_forward_labels(std::int64_t M, std::int64_t in) {
  const bool few =
      on_host ? Impl::HostInt8::runs_few_sample_forward() && M <= Impl::HostInt8::few_samples
              : M <= 16 && in % 16 == 0;
  std::vector<std::string> labels = {"TernaryCounter::forward::quantize_x"};
  if (few) {
    labels.push_back("TernaryCounter::forward::int8_few_samples");
  } else if (tensor_cores(in)) {
    labels.push_back("TernaryCounter::forward::int8_product::tensor_cores");
  } else if (vendor_int8_gemm) {
    labels.push_back("TernaryCounter::forward::int8_decode_rows");
    labels.push_back("TernaryCounter::forward::int8_epilogue");
  } else {
    labels.push_back(int8_label("forward::int8_product"));
  }
  return labels;
}

/// CUDA: a few samples over a depth of a multiple of 16 read the codes once
/// (FewSampleInt8BackwardInput), more run on the tensor cores or decode W for cuBLAS.
std::vector<std::string> int8_backward_input_labels(std::int64_t M, std::int64_t in) {
  if (vendor_int8_gemm && M <= 16 && in % 16 == 0) {
    return {"TernaryCounter::backward_input::quantize_grad_out",
            "TernaryCounter::backward_input::int8_few_samples",
            "TernaryCounter::backward_input::int8_few_samples_epilogue"};
  }
  if (tensor_cores(in)) {
    return {"TernaryCounter::backward_input::quantize_grad_out",
            "TernaryCounter::backward_input::int8_product::tensor_cores"};
  }
  if (vendor_int8_gemm) {
    return {"TernaryCounter::backward_input::quantize_grad_out",
            "TernaryCounter::backward_input::int8_decode_columns",
            "TernaryCounter::backward_input::int8_epilogue"};
  }
  return {"TernaryCounter::backward_input::quantize_grad_out",
          int8_label("backward_input::int8_product")};
}

/// update_from_io's quantizers: GPUs find the columns' absmax first (TiledColumnQuantizer).
std::vector<std::string> int8_column_quantizer_labels() {
  if (on_host) return {"TernaryCounter::update_from_io::quantize_columns"};
  return {"TernaryCounter::update_from_io::column_absmax",
          "TernaryCounter::update_from_io::quantize_columns"};
}

/// update_from_io's kernels per chunk of rows after its quantizers: on CUDA the row update reads
/// cuBLAS's int32 sums itself (IntegerSumRows), elsewhere the gradient rows are written first.
std::vector<std::string> int8_chunk_labels() {
  if (vendor_int8_gemm) return {"TernaryCounter::row_update"};
  return {int8_label("update_from_io::int8_gradient"), "TernaryCounter::row_update"};
}

/// CUDA: up to 16 samples' gradient is formed inside one row update of all rows
/// (FewSampleGradientRows), from x's words packed for it.
std::vector<std::string> int8_few_sample_update_labels() {
  return {"TernaryCounter::update_from_io::pack_sample_words", "TernaryCounter::row_update"};
}

TEST(Labels, EveryKernelHasItsOwnLabel) {
  // On GPUs forward and backward_input have three kernels: a few samples over aligned rows of
  // whole 64-deep steps (one sample of a 256 x 256 layer), a few samples otherwise (four of an
  // 8 x 16 layer), and the tile engine (64 samples). Hosts run the tile engine for all three.
  struct Product {
    std::int64_t out, in, M;
    const char* gpu_kernel;
  };
  const Product products[] = {
      {256, 256, 1, "few_sample"}, {8, 16, 4, "small_batch"}, {8, 16, 64, "tiles"}};
  const bool gpu_kernels = Tiling<ExecSpace>::small_batch;
  // The kernel of a product on this backend (HIP has no few-sample kernel: Tiling).
  const auto kernel_of = [&](const Product& p) -> std::string {
    if (!gpu_kernels) return "tiles";
    if (std::string(p.gpu_kernel) == "few_sample" && !Tiling<ExecSpace>::few_sample) {
      return "small_batch";
    }
    return p.gpu_kernel;
  };
  UpdateParams params;

  kernels.clear();
  allocations.clear();
  Kokkos::Tools::Experimental::set_begin_parallel_for_callback(record_kernel);
  Kokkos::Tools::Experimental::set_begin_parallel_reduce_callback(record_kernel);
  Kokkos::Tools::Experimental::set_begin_parallel_scan_callback(record_kernel);
  std::set<std::string> seen;
  const auto expect_labels = [&](const std::vector<std::string>& labels,
                                 const std::vector<std::string>& expected,
                                 const std::string& what) {
    EXPECT_EQ(labels, expected) << what;
    seen.insert(labels.begin(), labels.end());
  };
  for (const Product& p : products) {
    const std::string shape =
        std::to_string(p.out) + " x " + std::to_string(p.in) + ", M = " + std::to_string(p.M);
    const Matrix x = filled("x", p.M, p.in, 0.5f), grad_out = filled("grad_out", p.M, p.out, 0.25f);
    const Matrix y("y", p.M, p.out), grad_x("grad_x", p.M, p.in);
    const Matrix grad_w = filled("grad_w", p.out, p.in, 0.125f);
    const std::string kernel = kernel_of(p);
    Kokkos::Tools::Experimental::set_allocate_data_callback(record_allocation);
    {
      std::optional<PackedState<MemSpace>> state;
      expect_labels(labels_of([&] { state.emplace("layer", p.out, p.in, params.C); }),
                    {"TernaryCounter::PackedState::fill_codes"}, "PackedState, " + shape);
      expect_labels(labels_of([&] { forward(ExecSpace{}, *state, x, y); }),
                    {"TernaryCounter::forward::" + kernel}, "forward, " + shape);
      expect_labels(labels_of([&] { backward_input(ExecSpace{}, *state, grad_out, grad_x); }),
                    {"TernaryCounter::backward_input::" + kernel}, "backward_input, " + shape);
      expect_labels(labels_of([&] { update(ExecSpace{}, *state, grad_w, params); }),
                    {"TernaryCounter::row_update"}, "update, " + shape);
      // update_from_io: per chunk of rows, the gradient tiles, then their row update; on CUDA
      // a few samples' row update forms the gradient itself (one launch).
      const std::vector<std::string> from_io =
          labels_of([&] { update_from_io(ExecSpace{}, *state, x, grad_out, params); });
      std::vector<std::string> chunks;
      if (Impl::Capabilities<ExecSpace>::few_sample_fp32_update &&
          p.M <= Impl::few_sample_update_fp32_max) {
        chunks.push_back("TernaryCounter::row_update");
      } else {
        for (std::size_t c = 0; c < std::max<std::size_t>(1, from_io.size() / 2); ++c) {
          chunks.push_back("TernaryCounter::update_from_io::gradient_tiles");
          chunks.push_back("TernaryCounter::row_update");
        }
      }
      expect_labels(from_io, chunks, "update_from_io, " + shape);
      // The integer path: its quantizers, then its product (on hosts with VNNI, that engine).
      expect_labels(labels_of([&] { forward(ExecSpace{}, *state, x, y, {Precision::int8}); }),
                    int8_forward_labels(p.M, p.in), "forward int8, " + shape);
      expect_labels(labels_of([&] {
                      backward_input(ExecSpace{}, *state, grad_out, grad_x, {Precision::int8, 1});
                    }),
                    int8_backward_input_labels(p.M, p.in), "backward_input int8, " + shape);
      const std::vector<std::string> int8_from_io = labels_of(
          [&] { update_from_io(ExecSpace{}, *state, x, grad_out, params, Precision::int8); });
      std::vector<std::string> int8_chunks = int8_column_quantizer_labels();
      if (vendor_int8_gemm && p.M <= 16) {
        for (const std::string& label : int8_few_sample_update_labels()) {
          int8_chunks.push_back(label);
        }
      } else {
        const std::vector<std::string> chunk = int8_chunk_labels();
        const std::size_t int8_chunk_count =
            (int8_from_io.size() - int8_chunks.size()) / chunk.size();
        for (std::size_t c = 0; c < std::max<std::size_t>(1, int8_chunk_count); ++c) {
          int8_chunks.insert(int8_chunks.end(), chunk.begin(), chunk.end());
        }
      }
      expect_labels(int8_from_io, int8_chunks, "update_from_io int8, " + shape);
    }
    Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  }
  Kokkos::Tools::Experimental::set_begin_parallel_for_callback(nullptr);
  Kokkos::Tools::Experimental::set_begin_parallel_reduce_callback(nullptr);
  Kokkos::Tools::Experimental::set_begin_parallel_scan_callback(nullptr);

  // One label per kernel: the distinct labels are exactly the backend's kernels.
  std::set<std::string> expected = {"TernaryCounter::PackedState::fill_codes",
                                    "TernaryCounter::row_update",
                                    "TernaryCounter::update_from_io::gradient_tiles"};
  for (const char* call : {"forward", "backward_input"}) {
    for (const Product& p : products) {
      expected.insert(std::string("TernaryCounter::") + call + "::" + kernel_of(p));
    }
  }
  for (const std::string& label : int8_column_quantizer_labels()) expected.insert(label);
  for (const std::string& label : int8_chunk_labels()) expected.insert(label);
  if (vendor_int8_gemm) {
    for (const std::string& label : int8_few_sample_update_labels()) expected.insert(label);
  }
  for (const Product& p : products) {
    for (const std::string& label : int8_forward_labels(p.M, p.in)) expected.insert(label);
    for (const std::string& label : int8_backward_input_labels(p.M, p.in)) {
      expected.insert(label);
    }
  }
  EXPECT_EQ(seen, expected);

  // Kokkos' own buffers (team scratch, reduction space) are named by Kokkos.
  int library_allocations = 0;
  for (const std::string& name : allocations) {
    if (starts_with(name, "Kokkos::")) continue;
    ++library_allocations;
    EXPECT_TRUE(starts_with(name, "TernaryCounter::")) << "unlabelled allocation: " << name;
  }
  // Per layer: codes, scale, v, update's and update_from_io's skipped rows, the workspace.
  EXPECT_GE(library_allocations, 3 * 6);
}

}  // namespace
}  // namespace TernaryCounter::Test
