// The calls of ternarycounter.torch.TernaryLinear over tensor memory. Torch owns every array
// (the layer's codes, scale and v are module buffers; operands, outputs and the workspace are
// tensors), so a call only wraps addresses in unmanaged Views:
// - host memory (device < 0) runs on the build's host execution space;
// - GPU memory (device >= 0, CUDA builds) runs on a Kokkos::Cuda instance built on the caller's
//   stream (torch's current stream), kept per stream: the work is ordered with torch's kernels
//   and nothing is fenced, so a step stays asynchronous on the GPU.
// The Python side (ternarycounter/_tensors.py) checks the tensors' device, dtype, shape and
// layout and raises naming the argument; the library checks the extents and parameters before it
// changes anything.
#include "TernaryCounterTensors.hpp"

#include <TernaryCounter.hpp>
#include <TernaryCounter_TernaryLinear.hpp>

#include <Kokkos_Core.hpp>

#include <pybind11/pybind11.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>

#include <unistd.h>

namespace py = pybind11;
namespace tc = TernaryCounter;

namespace TernaryCounterPython {

namespace {

pid_t initializing_pid = 0;

using HostSpace = Kokkos::DefaultHostExecutionSpace;

[[noreturn]] void forked_error(const char* what) {
  throw std::runtime_error(
      std::string("ternarycounter: this process (pid ") + std::to_string(getpid()) +
      ") is a fork of the process that initialized Kokkos (pid " +
      std::to_string(initializing_pid) + "), and " + what +
      " do not survive fork. Start worker processes with the 'spawn' or 'forkserver' method "
      "(multiprocessing.get_context('spawn'), DataLoader(multiprocessing_context='spawn')), "
      "or call ternarycounter only in the parent");
}

#if defined(KOKKOS_ENABLE_CUDA)
// One Kokkos::Cuda instance per CUDA stream: building one allocates its internal buffers, and the
// library keeps per-instance scratch, so an instance lives as long as the process uses its stream.
std::map<std::uintptr_t, Kokkos::Cuda>& cuda_instances() {
  static auto* instances = new std::map<std::uintptr_t, Kokkos::Cuda>();
  return *instances;
}

Kokkos::Cuda cuda_instance(std::int64_t device, std::uintptr_t stream) {
  if (forked_child()) forked_error("the CUDA context");
  const int kokkos_device = Kokkos::Cuda().cuda_device();
  if (device != kokkos_device) {
    throw py::value_error("TernaryLinear: the tensors are on cuda:" + std::to_string(device) +
                          " but Kokkos runs on cuda:" + std::to_string(kokkos_device) +
                          " in this process (set CUDA_VISIBLE_DEVICES, or torch.cuda.set_device "
                          "before importing ternarycounter)");
  }
  auto& instances = cuda_instances();
  auto found = instances.find(stream);
  if (found == instances.end()) {
    found = instances.emplace(stream, Kokkos::Cuda(reinterpret_cast<cudaStream_t>(stream))).first;
  }
  return found->second;
}
#endif

/// forward (Forward) or backward_input of an input of type `input` [rows, depth] into an output
/// of type `output` [rows, cols], the types checked.
template <bool Forward>
void tensor_product(std::int64_t device, std::uintptr_t stream, std::uintptr_t codes,
                    std::uintptr_t scale, std::int64_t out, std::int64_t in, int C,
                    std::uintptr_t input, std::int64_t rows, std::uintptr_t output,
                    const tc::ProductOptions& options, const std::string& input_type,
                    const std::string& output_type) {
  const char* call = "TernaryLinear";
  const ElementType in_type = parse_element_type(call, Forward ? "x" : "grad_out", input_type);
  const ElementType out_type = parse_element_type(call, Forward ? "y" : "grad_x", output_type);
  check_product_types(call, in_type, out_type);
  const std::int64_t depth = Forward ? in : out, cols = Forward ? out : in;
  on_device(call, device, stream, [&](const auto& space) {
    using Mem = typename std::decay_t<decltype(space)>::memory_space;
    const auto state = state_at<Mem>(codes, scale, 0, out, in, C);
    with_element_type(in_type, [&](auto t) {
      with_element_type(out_type, [&](auto u) {
        using T = decltype(t);
        using U = decltype(u);
        // (check_product_types has refused the other pairs.)
        if constexpr (std::is_same_v<U, float> || std::is_same_v<U, T>) {
          const auto a = input_at<Mem, T>(input, rows, depth);
          const auto b = output_at<Mem, U>(output, rows, cols);
          if constexpr (Forward) {
            tc::forward(space, state, a, b, options);
          } else {
            tc::backward_input(space, state, a, b, options);
          }
        }
      });
    });
  });
}

void tensor_forward(std::int64_t device, std::uintptr_t stream, std::uintptr_t codes,
                    std::uintptr_t scale, std::int64_t out, std::int64_t in, int C,
                    std::uintptr_t x, std::int64_t rows, std::uintptr_t y,
                    const std::string& precision, const std::string& x_type,
                    const std::string& y_type) {
  const tc::ProductOptions options{parse_precision("TernaryLinear", precision), 0};
  tensor_product<true>(device, stream, codes, scale, out, in, C, x, rows, y, options, x_type,
                       y_type);
}

void tensor_backward_input(std::int64_t device, std::uintptr_t stream, std::uintptr_t codes,
                           std::uintptr_t scale, std::int64_t out, std::int64_t in, int C,
                           std::uintptr_t grad_out, std::int64_t rows, std::uintptr_t grad_x,
                           const std::string& precision, std::uint32_t seed,
                           std::int64_t sample_offset, const std::string& grad_out_type,
                           const std::string& grad_x_type) {
  if (sample_offset < 0) {
    throw py::value_error("TernaryLinear: sample_offset = " + std::to_string(sample_offset) +
                          " must be >= 0");
  }
  tc::ProductOptions options{parse_precision("TernaryLinear", precision), seed};
  options.sample_offset = sample_offset;
  tensor_product<false>(device, stream, codes, scale, out, in, C, grad_out, rows, grad_x, options,
                        grad_out_type, grad_x_type);
}

// Enqueues one update step; the skipped-row count lands in the int64 at `skipped` (same device)
// when the work is done. `workspace` holds workspace_rows x in floats.
void tensor_update_from_io(std::int64_t device, std::uintptr_t stream, std::uintptr_t codes,
                           std::uintptr_t scale, std::uintptr_t v, std::int64_t out,
                           std::int64_t in, int C, std::uintptr_t x, std::int64_t rows,
                           std::uintptr_t grad_out, std::uintptr_t workspace,
                           std::int64_t workspace_rows, std::uintptr_t skipped, double lr,
                           double lr_scale, double rms_beta, double rms_eps, double clip,
                           std::uint32_t seed, bool lagged, const std::string& precision,
                           const std::string& input_type) {
  tc::UpdateParams p = recipe_params(C, lr, lr_scale, rms_beta, rms_eps, clip, seed, lagged);
  p.validate();
  const tc::Precision arithmetic = parse_precision("TernaryLinear", precision);
  const ElementType type = parse_element_type("TernaryLinear", "x and grad_out", input_type);
  on_device("TernaryLinear", device, stream, [&](const auto& space) {
    using Mem = typename std::decay_t<decltype(space)>::memory_space;
    with_element_type(type, [&](auto t) {
      using T = decltype(t);
      tc::update_from_io(
          space, state_at<Mem>(codes, scale, v, out, in, C), input_at<Mem, T>(x, rows, in),
          input_at<Mem, T>(grad_out, rows, out), p, output_at<Mem>(workspace, workspace_rows, in),
          tc::SkippedRowsView<Mem>(reinterpret_cast<std::int64_t*>(skipped)), arithmetic);
    });
  });
}

// The FP32 gradient of float32 x [rows, in] and grad_out [rows, out] into grad_w [out, in],
// continuing its chains when `accumulate` (an accumulation over micro-batches).
void tensor_gradient_from_io(std::int64_t device, std::uintptr_t stream, std::uintptr_t x,
                             std::uintptr_t grad_out, std::int64_t rows, std::int64_t out,
                             std::int64_t in, std::uintptr_t grad_w, bool accumulate) {
  on_device("TernaryLinear", device, stream, [&](const auto& space) {
    using Mem = typename std::decay_t<decltype(space)>::memory_space;
    tc::gradient_from_io(space, input_at<Mem>(x, rows, in), input_at<Mem>(grad_out, rows, out),
                         output_at<Mem>(grad_w, out, in), accumulate);
  });
}

// Enqueues the dense update from grad_w [out, in]; the skipped-row count lands in `skipped`.
void tensor_update(std::int64_t device, std::uintptr_t stream, std::uintptr_t codes,
                   std::uintptr_t scale, std::uintptr_t v, std::int64_t out, std::int64_t in, int C,
                   std::uintptr_t grad_w, std::uintptr_t skipped, double lr, double lr_scale,
                   double rms_beta, double rms_eps, double clip, std::uint32_t seed, bool lagged) {
  tc::UpdateParams p = recipe_params(C, lr, lr_scale, rms_beta, rms_eps, clip, seed, lagged);
  p.validate();
  on_device("TernaryLinear", device, stream, [&](const auto& space) {
    using Mem = typename std::decay_t<decltype(space)>::memory_space;
    tc::update(space, state_at<Mem>(codes, scale, v, out, in, C), input_at<Mem>(grad_w, out, in), p,
               tc::SkippedRowsView<Mem>(reinterpret_cast<std::int64_t*>(skipped)));
  });
}

void tensor_randomize(std::int64_t device, std::uintptr_t stream, std::uintptr_t codes,
                      std::uintptr_t scale, std::uintptr_t v, std::int64_t out, std::int64_t in,
                      int C, std::uint32_t seed, double init_scale) {
  on_device("TernaryLinear", device, stream, [&](const auto& space) {
    using Mem = typename std::decay_t<decltype(space)>::memory_space;
    tc::randomize_ternary(space, state_at<Mem>(codes, scale, v, out, in, C), seed,
                          float(init_scale));
  });
}

// Bytes of the library's kept scratch in host memory (gpu false) or on a GPU (index -1: the one
// Kokkos runs on; another GPU, or a build without CUDA, holds none).
std::int64_t scratch_bytes(bool gpu, std::int64_t index) {
  if (!gpu) return tc::scratch_bytes_held<Kokkos::HostSpace>();
#if defined(KOKKOS_ENABLE_CUDA)
  if (forked_child()) forked_error("the CUDA context");
  if (index < 0 || index == Kokkos::Cuda().cuda_device()) {
    return tc::scratch_bytes_held<Kokkos::Cuda::memory_space>();
  }
#endif
  (void)index;
  return 0;
}

std::int64_t tensor_workspace_rows(std::int64_t device, std::int64_t out, std::int64_t in) {
#if defined(KOKKOS_ENABLE_CUDA)
  if (device >= 0) return tc::from_io_workspace_rows<Kokkos::Cuda>(out, in);
#endif
  (void)device;
  return tc::from_io_workspace_rows<HostSpace>(out, in);
}

}  // namespace

void record_initializing_process() {
  initializing_pid = getpid();
}

bool forked_child() {
  return initializing_pid != 0 && getpid() != initializing_pid;
}

void check_host_usable() {
  if (forked_child() && !std::is_same_v<HostSpace, Kokkos::Serial>) {
    forked_error((std::string("its host threads (") + HostSpace::name() + ")").c_str());
  }
}

#if defined(KOKKOS_ENABLE_CUDA)
Kokkos::Cuda stream_instance(std::int64_t device, std::uintptr_t stream) {
  return cuda_instance(device, stream);
}
#endif

void release_device_instances() {
#if defined(KOKKOS_ENABLE_CUDA)
  cuda_instances().clear();
#endif
}

tc::Precision parse_precision(const std::string& call, const std::string& precision) {
  if (precision == "fp32") return tc::Precision::fp32;
  if (precision == "int8") return tc::Precision::int8;
  throw py::value_error(call + ": precision must be \"fp32\" or \"int8\", not \"" + precision +
                        "\"");
}

ElementType parse_element_type(const std::string& call, const char* what, const std::string& name) {
  if (name == "float32") return ElementType::float32;
  if (name == "bfloat16") return ElementType::bfloat16;
  if (name == "float16") return ElementType::float16;
  throw py::value_error(call + ": " + what + " must be float32, bfloat16 or float16, not \"" +
                        name + "\"");
}

void check_product_types(const std::string& call, ElementType input, ElementType output) {
  if (output != ElementType::float32 && output != input) {
    throw py::value_error(call + ": a product's output is float32 or of its input's type");
  }
}

tc::UpdateParams recipe_params(int C, double lr, double lr_scale, double rms_beta, double rms_eps,
                               double clip, std::uint32_t seed, bool lagged) {
  tc::UpdateParams p;
  p.C = C;
  p.lr = lr;
  p.lr_scale = lr_scale;
  p.rms_beta = rms_beta;
  p.rms_eps = rms_eps;
  p.clip = clip;
  p.seed = seed;
  p.lagged = lagged;
  return p;
}

void register_tensor_calls(py::module_& m) {
#if defined(KOKKOS_ENABLE_CUDA)
  m.attr("cuda") = true;
#else
  m.attr("cuda") = false;
#endif
  m.def("forked_child", &forked_child,
        "Whether this process is a fork of the one that initialized Kokkos.");
  m.def("kokkos_cuda_device", []() -> std::int64_t {
#if defined(KOKKOS_ENABLE_CUDA)
    return Kokkos::Cuda().cuda_device();
#else
    return -1;
#endif
  });
  m.def("tensor_forward", &tensor_forward, py::arg("device"), py::arg("stream"), py::arg("codes"),
        py::arg("scale"), py::arg("out"), py::arg("in_"), py::arg("C"), py::arg("x"),
        py::arg("rows"), py::arg("y"), py::arg("precision"), py::arg("x_type") = "float32",
        py::arg("y_type") = "float32");
  m.def("tensor_backward_input", &tensor_backward_input, py::arg("device"), py::arg("stream"),
        py::arg("codes"), py::arg("scale"), py::arg("out"), py::arg("in_"), py::arg("C"),
        py::arg("grad_out"), py::arg("rows"), py::arg("grad_x"), py::arg("precision"),
        py::arg("seed"), py::arg("sample_offset") = 0, py::arg("grad_out_type") = "float32",
        py::arg("grad_x_type") = "float32");
  m.def("tensor_update_from_io", &tensor_update_from_io, py::arg("device"), py::arg("stream"),
        py::arg("codes"), py::arg("scale"), py::arg("v"), py::arg("out"), py::arg("in_"),
        py::arg("C"), py::arg("x"), py::arg("rows"), py::arg("grad_out"), py::arg("workspace"),
        py::arg("workspace_rows"), py::arg("skipped"), py::arg("lr"), py::arg("lr_scale"),
        py::arg("rms_beta"), py::arg("rms_eps"), py::arg("clip"), py::arg("seed"),
        py::arg("lagged"), py::arg("precision"), py::arg("input_type") = "float32");
  m.def("tensor_gradient_from_io", &tensor_gradient_from_io, py::arg("device"), py::arg("stream"),
        py::arg("x"), py::arg("grad_out"), py::arg("rows"), py::arg("out"), py::arg("in_"),
        py::arg("grad_w"), py::arg("accumulate"));
  m.def("tensor_update", &tensor_update, py::arg("device"), py::arg("stream"), py::arg("codes"),
        py::arg("scale"), py::arg("v"), py::arg("out"), py::arg("in_"), py::arg("C"),
        py::arg("grad_w"), py::arg("skipped"), py::arg("lr"), py::arg("lr_scale"),
        py::arg("rms_beta"), py::arg("rms_eps"), py::arg("clip"), py::arg("seed"),
        py::arg("lagged"));
  m.def("tensor_randomize", &tensor_randomize, py::arg("device"), py::arg("stream"),
        py::arg("codes"), py::arg("scale"), py::arg("v"), py::arg("out"), py::arg("in_"),
        py::arg("C"), py::arg("seed"), py::arg("init_scale"));
  m.def("tensor_workspace_rows", &tensor_workspace_rows, py::arg("device"), py::arg("out"),
        py::arg("in_"));
  m.def("scratch_bytes", &scratch_bytes, py::arg("gpu"), py::arg("index"));
}

}  // namespace TernaryCounterPython
