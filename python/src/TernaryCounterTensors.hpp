// The extension's calls over tensor memory (PyTorch's TernaryLinear): the state and the operands
// are given as addresses of memory the caller owns (torch tensors' data_ptr), on the host or on
// the build's GPU, and become unmanaged Kokkos Views for one call.
#pragma once

#include <pybind11/pybind11.h>

#include <TernaryCounter_PackedState.hpp>
#include <TernaryCounter_Params.hpp>
#include <TernaryCounter_Precision.hpp>
#include <TernaryCounter_ViewTypes.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

namespace TernaryCounterPython {

/// Adds tensor_forward, tensor_backward_input, tensor_update_from_io and the device queries to
/// the module.
void register_tensor_calls(pybind11::module_& m);

/// Whether this process is a fork of the one that initialized Kokkos (whose host threads and
/// GPU context the child does not have).
bool forked_child();

/// Throws RuntimeError (naming the fix) in a forked child where the host execution space has
/// threads (OpenMP's do not survive fork); a Serial host space works there.
void check_host_usable();

/// Drops the cached GPU execution-space instances (before Kokkos::finalize).
void release_device_instances();

/// Records the process that initialized Kokkos (called once, at import).
void record_initializing_process();

/// Adds the integer path's data-parallel phases (TernaryCounterDistributed.cpp) to the module.
void register_distributed_calls(pybind11::module_& m);

#if defined(KOKKOS_ENABLE_CUDA)
/// The Kokkos::Cuda instance of a CUDA stream of `device` (one per stream, kept).
Kokkos::Cuda stream_instance(std::int64_t device, std::uintptr_t stream);
#endif

/// The state of an out x in layer (C) over the memory at the given addresses (v = 0: an empty
/// View, for the products, which do not read it).
template <class MemSpace>
TernaryCounter::PackedState<MemSpace> state_at(std::uintptr_t codes, std::uintptr_t scale,
                                               std::uintptr_t v, std::int64_t out, std::int64_t in,
                                               int C) {
  using State = TernaryCounter::PackedState<MemSpace>;
  State::check_shape(out, in, C);
  State state;
  state.C = C;
  state.codes = typename State::codes_view(
      reinterpret_cast<std::uint8_t*>(codes), out,
      in / TernaryCounter::codes_per_group * TernaryCounter::bytes_per_group);
  state.scale = typename State::row_view(reinterpret_cast<float*>(scale), out);
  state.v = typename State::row_view(reinterpret_cast<float*>(v), v ? out : 0);
  return state;
}

/// A [rows, cols] input of element type T (float by default) over the memory at `address`.
template <class MemSpace, class T = float>
TernaryCounter::InputView<MemSpace, T> input_at(std::uintptr_t address, std::int64_t rows,
                                                std::int64_t cols) {
  return TernaryCounter::InputView<MemSpace, T>(reinterpret_cast<const T*>(address), rows, cols);
}

/// A [rows, cols] output of element type T over the memory at `address`.
template <class MemSpace, class T = float>
TernaryCounter::OutputView<MemSpace, T> output_at(std::uintptr_t address, std::int64_t rows,
                                                  std::int64_t cols) {
  return TernaryCounter::OutputView<MemSpace, T>(reinterpret_cast<T*>(address), rows, cols);
}

/// The element types of the tensors the calls take, named as torch names them ("float32",
/// "bfloat16", "float16").
enum class ElementType { float32, bfloat16, float16 };

/// The element type a Python call names; throws ValueError naming `call` and `what` otherwise.
ElementType parse_element_type(const std::string& call, const char* what, const std::string& name);

/// Calls f(T{}) with T the C++ type of `type` (float, TernaryCounter::bfloat16 or float16).
template <class F>
void with_element_type(ElementType type, F&& f) {
  switch (type) {
    case ElementType::float32:
      f(float{});
      return;
    case ElementType::bfloat16:
      f(TernaryCounter::bfloat16{});
      return;
    case ElementType::float16:
      f(TernaryCounter::float16{});
      return;
  }
}

/// Throws ValueError unless a product's input and output types are ones the library takes: a
/// float input with a float output, a 16-bit input with a float output or one of its own type.
void check_product_types(const std::string& call, ElementType input, ElementType output);

/// The precision a Python call names ("fp32" or "int8"); throws ValueError naming `call`
/// otherwise. The one parser of the string, for every call of the package.
TernaryCounter::Precision parse_precision(const std::string& call, const std::string& precision);

/// UpdateParams with the recipe's arguments as the Python calls pass them (the caller sets the
/// rest and validates).
TernaryCounter::UpdateParams recipe_params(int C, double lr, double lr_scale, double rms_beta,
                                           double rms_eps, double clip, std::uint32_t seed,
                                           bool lagged);

/// Calls f(space) on the execution space that runs tensors of `device` (-1: the host, fenced
/// after the call; else the instance of `stream`), without the GIL. `caller` names the Python
/// call in the error of a GPU tensor given to a host-only build.
template <class F>
void on_device(const char* caller, std::int64_t device, std::uintptr_t stream, F&& f) {
  using HostSpace = Kokkos::DefaultHostExecutionSpace;
  if (device < 0) {
    check_host_usable();
    pybind11::gil_scoped_release release;
    f(HostSpace{});
    HostSpace{}.fence("TernaryCounter::python::host_call");
    return;
  }
#if defined(KOKKOS_ENABLE_CUDA)
  const Kokkos::Cuda space = stream_instance(device, stream);
  pybind11::gil_scoped_release release;
  f(space);
#else
  (void)stream;
  throw pybind11::value_error(
      std::string(caller) + ": a tensor is on a GPU (cuda:" + std::to_string(device) +
      ") but this build of ternarycounter runs on the host (" + std::string(HostSpace::name()) +
      "); build it with the cuda preset, or move the layer to the CPU");
#endif
}

}  // namespace TernaryCounterPython
