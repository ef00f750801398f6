// The extension module _ternarycounter: the library's host calls (Kokkos'
// DefaultHostExecutionSpace) over NumPy arrays. A State's codes, scale and v are NumPy arrays
// that the PackedState's (unmanaged) Views point into: reading or writing them reads or writes the
// state, and no Kokkos allocation outlives Kokkos::finalize at interpreter exit. Arguments are
// checked here (dtype, C-contiguity, writability, shape: ValueError/TypeError naming the
// argument) before the library is called; the library checks the rest before it changes
// anything. ternarycounter/__init__.py turns PyTorch tensors and DLPack producers into arrays.
#include "TernaryCounterTensors.hpp"

#include <TernaryCounter.hpp>
#include <TernaryCounter_Checkpoint.hpp>
#include <TernaryCounter_TernaryLinear.hpp>

// The library's softmax cross-entropy (the main job's loss): portable exp/log, one thread per
// sample.
#include <TernaryCounter_Loss.hpp>

#include <Kokkos_Core.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace py = pybind11;
namespace tc = TernaryCounter;
using TernaryCounterPython::check_host_usable;

namespace {

using ExecSpace = Kokkos::DefaultHostExecutionSpace;
using MemSpace = ExecSpace::memory_space;
using HostState = tc::PackedState<MemSpace>;

// The alignment of the state's arrays: that of Kokkos' own allocations.
constexpr std::size_t array_alignment = 64;

// A C-contiguous NumPy array of `shape` whose memory is 64-byte aligned and freed with the array.
template <class T>
py::array_t<T> aligned_array(const std::vector<py::ssize_t>& shape) {
  std::size_t count = 1;
  for (py::ssize_t n : shape) count *= std::size_t(n);
  const std::size_t bytes = (std::max<std::size_t>(count * sizeof(T), 1) + array_alignment - 1) /
                            array_alignment * array_alignment;
  void* data = std::aligned_alloc(array_alignment, bytes);
  if (data == nullptr) throw std::bad_alloc();
  py::capsule owner(data, [](void* p) { std::free(p); });
  return py::array_t<T>(shape, static_cast<T*>(data), owner);
}

// One layer's training state: the arrays own the memory, `state` views it.
struct State {
  py::array_t<std::uint8_t> codes;
  py::array_t<float> scale;
  py::array_t<float> v;
  HostState state;

  State(std::int64_t out, std::int64_t in, int C) {
    check_host_usable();
    HostState::check_shape(out, in, C);
    codes = aligned_array<std::uint8_t>(
        {py::ssize_t(out), py::ssize_t(in / tc::codes_per_group * tc::bytes_per_group)});
    scale = aligned_array<float>({py::ssize_t(out)});
    v = aligned_array<float>({py::ssize_t(out)});
    state.C = C;
    state.codes = HostState::codes_view(codes.mutable_data(), codes.shape(0), codes.shape(1));
    state.scale = HostState::row_view(scale.mutable_data(), out);
    state.v = HostState::row_view(v.mutable_data(), out);
    HostState::fill_codes(state.codes, tc::encode(0, 0, C));
    Kokkos::deep_copy(state.scale, 1.0f);
    Kokkos::deep_copy(state.v, 0.0f);
    Kokkos::fence();
  }
};

// Which Python exception a bad argument raises: a wrong type/dtype is a TypeError, a wrong
// shape, layout or read-only output a ValueError.
[[noreturn]] void type_error(const std::string& call, const std::string& name,
                             const std::string& what) {
  throw py::type_error(call + ": " + name + " " + what);
}
[[noreturn]] void value_error(const std::string& call, const std::string& name,
                              const std::string& what) {
  throw py::value_error(call + ": " + name + " " + what);
}

std::string shape_string(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t d = 0; d < a.ndim(); ++d) {
    s += (d ? ", " : "") + std::to_string(a.shape(d));
  }
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// `obj` as a float32 C-contiguous [rows, cols] array, without a copy (rows or cols < 0: any).
py::array float_matrix(const py::handle& obj, const std::string& call, const std::string& name,
                       std::int64_t rows, std::int64_t cols, bool writable) {
  if (!py::isinstance<py::array>(obj)) {
    type_error(call, name,
               "must be a NumPy array or a CPU tensor (float32, C-contiguous), not " +
                   std::string(py::str(py::type::of(obj).attr("__name__"))));
  }
  auto a = py::reinterpret_borrow<py::array>(obj);
  if (!a.dtype().is(py::dtype::of<float>())) {
    type_error(call, name, "must be float32, not " + std::string(py::str(a.dtype())));
  }
  if (a.ndim() != 2) {
    value_error(call, name, "must be 2-D, not of shape " + shape_string(a));
  }
  if (!(a.flags() & py::array::c_style)) {
    value_error(call, name,
                "must be C-contiguous (row-major, unit stride); pass a contiguous copy");
  }
  if ((rows >= 0 && a.shape(0) != rows) || (cols >= 0 && a.shape(1) != cols)) {
    value_error(call, name,
                "has shape " + shape_string(a) + " but (" +
                    (rows >= 0 ? std::to_string(rows) : std::string("M")) + ", " +
                    (cols >= 0 ? std::to_string(cols) : std::string("N")) + ") is needed");
  }
  if (writable && !a.writeable()) value_error(call, name, "is read-only");
  if (reinterpret_cast<std::uintptr_t>(a.data()) % alignof(float) != 0) {
    value_error(call, name, "is not aligned to 4 bytes");
  }
  return a;
}

// The library reads its inputs while it writes its output: they must not share memory. Both are
// float32 (checked): their bytes are counted from the element count, because pybind11 before 2.12
// reads the item size from NumPy 1's descriptor layout, which NumPy 2 changed.
void check_disjoint(const std::string& call, const py::array& in, const std::string& in_name,
                    const py::array& out, const std::string& out_name) {
  const auto* a = static_cast<const char*>(in.data());
  const auto* b = static_cast<const char*>(out.data());
  const auto in_bytes = static_cast<std::size_t>(in.size()) * sizeof(float);
  const auto out_bytes = static_cast<std::size_t>(out.size()) * sizeof(float);
  if (a < b + out_bytes && b < a + in_bytes) {
    value_error(call, out_name, "shares memory with " + in_name + "; pass another array");
  }
}

tc::InputView<MemSpace> input_view(const py::array& a) {
  return tc::InputView<MemSpace>(static_cast<const float*>(a.data()), a.shape(0), a.shape(1));
}
tc::OutputView<MemSpace> output_view(py::array& a) {
  return tc::OutputView<MemSpace>(static_cast<float*>(a.mutable_data()), a.shape(0), a.shape(1));
}

tc::UpdateParams update_params(const State& s, const std::string& call, double lr, double lr_scale,
                               double rms_beta, double rms_eps, double clip, std::uint32_t seed,
                               bool lagged, std::int64_t row_offset, int team_size,
                               std::int64_t workspace_bytes) {
  tc::UpdateParams p = TernaryCounterPython::recipe_params(s.state.C, lr, lr_scale, rms_beta,
                                                           rms_eps, clip, seed, lagged);
  p.row_offset = row_offset;
  p.team_size = team_size;
  p.workspace_bytes = workspace_bytes;
  p.validate();
  return p;
}

py::array forward(const State& s, const py::handle& x_obj, const py::handle& y_obj,
                  const std::string& precision) {
  check_host_usable();
  const py::array x = float_matrix(x_obj, "forward", "x", -1, s.state.in(), false);
  py::array y = y_obj.is_none()
                    ? py::array(aligned_array<float>({x.shape(0), py::ssize_t(s.state.out())}))
                    : float_matrix(y_obj, "forward", "y", x.shape(0), s.state.out(), true);
  check_disjoint("forward", x, "x", y, "y");
  const tc::ProductOptions options{TernaryCounterPython::parse_precision("forward", precision), 0};
  {
    py::gil_scoped_release release;
    tc::forward(ExecSpace{}, s.state, input_view(x), output_view(y), options);
    ExecSpace{}.fence();
  }
  return y;
}

py::array backward_input(const State& s, const py::handle& grad_out_obj,
                         const py::handle& grad_x_obj, const std::string& precision,
                         std::uint32_t seed) {
  check_host_usable();
  const py::array grad_out =
      float_matrix(grad_out_obj, "backward_input", "grad_out", -1, s.state.out(), false);
  py::array grad_x =
      grad_x_obj.is_none()
          ? py::array(aligned_array<float>({grad_out.shape(0), py::ssize_t(s.state.in())}))
          : float_matrix(grad_x_obj, "backward_input", "grad_x", grad_out.shape(0), s.state.in(),
                         true);
  check_disjoint("backward_input", grad_out, "grad_out", grad_x, "grad_x");
  const tc::ProductOptions options{
      TernaryCounterPython::parse_precision("backward_input", precision), seed};
  {
    py::gil_scoped_release release;
    tc::backward_input(ExecSpace{}, s.state, input_view(grad_out), output_view(grad_x), options);
    ExecSpace{}.fence();
  }
  return grad_x;
}

std::int64_t update(const State& s, const py::handle& grad_w_obj, double lr, double lr_scale,
                    double rms_beta, double rms_eps, double clip, std::uint32_t seed, bool lagged,
                    std::int64_t row_offset, int team_size, std::int64_t workspace_bytes) {
  check_host_usable();
  const py::array grad_w =
      float_matrix(grad_w_obj, "update", "grad_w", s.state.out(), s.state.in(), false);
  const tc::UpdateParams p = update_params(s, "update", lr, lr_scale, rms_beta, rms_eps, clip, seed,
                                           lagged, row_offset, team_size, workspace_bytes);
  py::gil_scoped_release release;
  return tc::update(ExecSpace{}, s.state, input_view(grad_w), p).skipped_rows;
}

std::int64_t update_from_io(const State& s, const py::handle& x_obj, const py::handle& grad_out_obj,
                            double lr, double lr_scale, double rms_beta, double rms_eps,
                            double clip, std::uint32_t seed, bool lagged, std::int64_t row_offset,
                            int team_size, std::int64_t workspace_bytes,
                            const std::string& precision) {
  check_host_usable();
  const py::array x = float_matrix(x_obj, "update_from_io", "x", -1, s.state.in(), false);
  const py::array grad_out =
      float_matrix(grad_out_obj, "update_from_io", "grad_out", x.shape(0), s.state.out(), false);
  const tc::UpdateParams p =
      update_params(s, "update_from_io", lr, lr_scale, rms_beta, rms_eps, clip, seed, lagged,
                    row_offset, team_size, workspace_bytes);
  const tc::Precision arithmetic =
      TernaryCounterPython::parse_precision("update_from_io", precision);
  py::gil_scoped_release release;
  return tc::update_from_io(ExecSpace{}, s.state, input_view(x), input_view(grad_out), p,
                            arithmetic)
      .skipped_rows;
}

// The unpacked codes [out, in] (each < 3(2C-1)) of a state, as a new array.
py::array_t<std::uint8_t> unpacked_codes(const State& s) {
  check_host_usable();
  const auto codes = tc::unpack_codes(s.state);
  auto result =
      aligned_array<std::uint8_t>({py::ssize_t(s.state.out()), py::ssize_t(s.state.in())});
  std::copy(codes.data(), codes.data() + codes.size(), result.mutable_data());
  return result;
}

// A new State holding a copy of a host PackedState.
State state_from(const HostState& src) {
  State s(src.out(), src.in(), src.C);
  tc::deep_copy(s.state, src);
  return s;
}

State from_codes(const py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>& codes,
                 const py::array_t<float, py::array::c_style | py::array::forcecast>& scale,
                 const py::array_t<float, py::array::c_style | py::array::forcecast>& v, int C) {
  if (codes.ndim() != 2) throw py::value_error("State.from_codes: codes must be 2-D [out, in]");
  if (scale.ndim() != 1 || v.ndim() != 1) {
    throw py::value_error("State.from_codes: scale and v must be 1-D [out]");
  }
  const Kokkos::View<const std::uint8_t**, MemSpace> cv(codes.data(), codes.shape(0),
                                                        codes.shape(1));
  const Kokkos::View<const float*, MemSpace> sv(scale.data(), scale.shape(0));
  const Kokkos::View<const float*, MemSpace> vv(v.data(), v.shape(0));
  return state_from(tc::pack_state("python", cv, sv, vv, C));
}

std::vector<std::pair<std::string, HostState>> named_states(
    const std::vector<std::pair<std::string, const State*>>& layers) {
  std::vector<std::pair<std::string, HostState>> result;
  for (const auto& [name, s] : layers) result.emplace_back(name, s->state);
  return result;
}

void save_layers(const std::string& path,
                 const std::vector<std::pair<std::string, const State*>>& layers, std::int64_t step,
                 const std::map<std::string, std::string>& metadata) {
  const auto states = named_states(layers);
  py::gil_scoped_release release;
  tc::save_layers(path, states, step, metadata);
}

// Loads the named layers into the states (all or none); returns (step, metadata).
std::pair<std::int64_t, std::map<std::string, std::string>> load_layers(
    const std::string& path, const std::vector<std::pair<std::string, const State*>>& layers) {
  const auto states = named_states(layers);
  py::gil_scoped_release release;
  const tc::Checkpoint checkpoint = tc::load_layers(path, states);
  return {checkpoint.step, checkpoint.metadata};
}

// Every layer of a checkpoint as new States: (layers by name, step, metadata).
py::tuple read_checkpoint(const std::string& path) {
  tc::Checkpoint checkpoint;
  {
    py::gil_scoped_release release;
    checkpoint = tc::read_checkpoint(path);
  }
  py::dict layers;
  for (const auto& layer : checkpoint.layers) {
    layers[py::str(layer.name)] = py::cast(state_from(layer.state));
  }
  return py::make_tuple(layers, checkpoint.step, checkpoint.metadata);
}

// Per sample m of logits [M, K] and labels [M] (int32, each in [0, K)): the loss and whether
// the first largest logit is the label's, as new arrays; writes grad [M, K] = (softmax -
// onehot) * grad_scale when grad is given. The C++ main job's kernel, the same bits.
py::tuple softmax_cross_entropy(const py::handle& logits_obj, const py::handle& labels_obj,
                                const py::handle& grad_obj, float grad_scale) {
  check_host_usable();
  const std::string call = "softmax_cross_entropy";
  const py::array logits = float_matrix(logits_obj, call, "logits", -1, -1, false);
  const std::int64_t M = logits.shape(0), K = logits.shape(1);
  if (!py::isinstance<py::array>(labels_obj)) type_error(call, "labels", "must be an int32 array");
  auto labels = py::reinterpret_borrow<py::array>(labels_obj);
  if (!labels.dtype().is(py::dtype::of<std::int32_t>())) {
    type_error(call, "labels", "must be int32, not " + std::string(py::str(labels.dtype())));
  }
  if (labels.ndim() != 1 || labels.shape(0) != M || !(labels.flags() & py::array::c_style)) {
    value_error(call, "labels", "must be a contiguous 1-D array of " + std::to_string(M));
  }
  const auto* label = static_cast<const std::int32_t*>(labels.data());
  for (std::int64_t m = 0; m < M; ++m) {
    if (label[m] < 0 || label[m] >= K) {
      value_error(call, "labels",
                  "holds " + std::to_string(label[m]) + " at " + std::to_string(m) +
                      ", not in [0, " + std::to_string(K) + ")");
    }
  }
  py::array grad = grad_obj.is_none() ? py::array(aligned_array<float>({0, py::ssize_t(K)}))
                                      : float_matrix(grad_obj, call, "grad", M, K, true);
  check_disjoint(call, logits, "logits", grad, "grad");
  auto losses = aligned_array<float>({py::ssize_t(M)});
  auto correct = aligned_array<std::int32_t>({py::ssize_t(M)});
  {
    py::gil_scoped_release release;
    using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, MemSpace>;
    tc::softmax_cross_entropy(
        ExecSpace{}, Matrix(static_cast<float*>(const_cast<void*>(logits.data())), M, K),
        Kokkos::View<std::int32_t*, MemSpace>(const_cast<std::int32_t*>(label), M),
        Kokkos::View<float*, MemSpace>(losses.mutable_data(), M),
        Kokkos::View<std::int32_t*, MemSpace>(correct.mutable_data(), M), 0,
        Matrix(static_cast<float*>(grad.mutable_data()), grad.shape(0), K), grad_scale);
    ExecSpace{}.fence();
  }
  return py::make_tuple(losses, correct);
}

// Not in a forked child: its copy of Kokkos has no threads or GPU context to stop.
void finalize_kokkos() {
  if (TernaryCounterPython::forked_child()) return;
  TernaryCounterPython::release_device_instances();
  if (Kokkos::is_initialized() && !Kokkos::is_finalized()) Kokkos::finalize();
}

// A CheckpointError's message quotes bytes of the file, which need not be UTF-8: they are
// escaped (\xNN) so that the Python message is never empty.
PyObject* checkpoint_error_type = nullptr;  // the module's exception type, alive with the process

void translate_checkpoint_error(std::exception_ptr error) {
  try {
    if (error) std::rethrow_exception(error);
  } catch (const tc::CheckpointError& e) {
    const std::string what = e.what();
    PyObject* message =
        PyUnicode_DecodeUTF8(what.data(), Py_ssize_t(what.size()), "backslashreplace");
    if (message == nullptr) {
      PyErr_Clear();
      message = PyUnicode_FromString("checkpoint error (message not decodable)");
    }
    PyErr_SetObject(checkpoint_error_type, message);
    Py_XDECREF(message);
  }
}

}  // namespace

PYBIND11_MODULE(_ternarycounter, m) {
  m.doc() = "TernaryCounter's host calls over NumPy arrays (see the ternarycounter package)";

  // Kokkos starts with the module and stops at interpreter exit; an application that initialized
  // Kokkos itself keeps it. Threads: OMP_NUM_THREADS or KOKKOS_NUM_THREADS when set, else every
  // logical CPU, as a C++ program gets (an earlier `import torch` lowers OpenMP's default to its
  // own thread count, which would otherwise become ours).
  if (!Kokkos::is_initialized()) {
    if (Kokkos::is_finalized()) {
      throw std::runtime_error("ternarycounter: Kokkos was finalized in this process");
    }
    Kokkos::InitializationSettings settings;
    const unsigned cpus = std::thread::hardware_concurrency();
    if (std::getenv("OMP_NUM_THREADS") == nullptr && std::getenv("KOKKOS_NUM_THREADS") == nullptr &&
        cpus > 0) {
      settings.set_num_threads(int(std::min(cpus, 512u)));  // 512: the most Kokkos' OpenMP takes
      // Kokkos would warn that this exceeds OpenMP's (torch-lowered) default: intended here.
      settings.set_disable_warnings(true);
    }
    Kokkos::initialize(settings);
    TernaryCounterPython::record_initializing_process();
    py::module_::import("atexit").attr("register")(py::cpp_function(&finalize_kokkos));
  }
  m.attr("execution_space") = ExecSpace::name();
  m.attr("concurrency") = ExecSpace().concurrency();

  checkpoint_error_type =
      py::exception<tc::CheckpointError>(m, "CheckpointError", PyExc_RuntimeError).inc_ref().ptr();
  py::register_exception_translator(&translate_checkpoint_error);
  TernaryCounterPython::register_tensor_calls(m);
  TernaryCounterPython::register_distributed_calls(m);

  py::class_<State>(m, "State",
                    "One layer's packed training state (SPEC §1): codes [out, 3*in/4] uint8 (4 "
                    "codes in 3 bytes), scale [out] and v [out] float32 and the counter depth C. "
                    "codes, scale and v are the state's own memory, not copies.")
      .def(py::init<std::int64_t, std::int64_t, int>(), py::arg("out"), py::arg("in_"),
           py::arg("C") = 8, "An out x in layer with every t = 0 and counter 0, scale 1 and v 0.")
      .def_property_readonly("codes", [](const State& s) { return s.codes; })
      .def_property_readonly("scale", [](const State& s) { return s.scale; })
      .def_property_readonly("v", [](const State& s) { return s.v; })
      .def_property_readonly("C", [](const State& s) { return s.state.C; })
      .def_property_readonly("out", [](const State& s) { return s.state.out(); })
      .def_property_readonly("in_", [](const State& s) { return s.state.in(); })
      .def("unpacked_codes", &unpacked_codes, "The codes [out, in], one per weight (a copy).")
      .def(
          "randomize",
          [](const State& s, std::uint32_t seed, float init_scale) {
            tc::randomize_ternary(s.state, seed, init_scale);
          },
          py::arg("seed"), py::arg("init_scale"),
          "Ternary values drawn from seed (TernaryCounter::randomize_ternary), counters 0, "
          "scale = init_scale, v = 0.")
      .def_static("from_codes", &from_codes, py::arg("codes"), py::arg("scale"), py::arg("v"),
                  py::arg("C"), "A state from unpacked codes [out, in], scale [out] and v [out].")
      .def("__repr__", [](const State& s) {
        return "ternarycounter.State(out=" + std::to_string(s.state.out()) +
               ", in_=" + std::to_string(s.state.in()) + ", C=" + std::to_string(s.state.C) + ")";
      });

  m.def("forward", &forward, py::arg("state"), py::arg("x"), py::arg("y") = py::none(),
        py::arg("precision") = "fp32");
  m.def("backward_input", &backward_input, py::arg("state"), py::arg("grad_out"),
        py::arg("grad_x") = py::none(), py::arg("precision") = "fp32", py::arg("seed") = 0);
  const tc::UpdateParams d;
  m.def("update", &update, py::arg("state"), py::arg("grad_w"), py::kw_only(), py::arg("lr") = d.lr,
        py::arg("lr_scale") = d.lr_scale, py::arg("rms_beta") = d.rms_beta,
        py::arg("rms_eps") = d.rms_eps, py::arg("clip") = d.clip, py::arg("seed") = d.seed,
        py::arg("lagged") = d.lagged, py::arg("row_offset") = d.row_offset,
        py::arg("team_size") = d.team_size, py::arg("workspace_bytes") = d.workspace_bytes);
  m.def("update_from_io", &update_from_io, py::arg("state"), py::arg("x"), py::arg("grad_out"),
        py::kw_only(), py::arg("lr") = d.lr, py::arg("lr_scale") = d.lr_scale,
        py::arg("rms_beta") = d.rms_beta, py::arg("rms_eps") = d.rms_eps, py::arg("clip") = d.clip,
        py::arg("seed") = d.seed, py::arg("lagged") = d.lagged,
        py::arg("row_offset") = d.row_offset, py::arg("team_size") = d.team_size,
        py::arg("workspace_bytes") = d.workspace_bytes, py::arg("precision") = "fp32");
  m.def(
      "check_update_params",
      [](const State& s, double lr, double lr_scale, double rms_beta, double rms_eps, double clip,
         std::uint32_t seed, bool lagged, std::int64_t row_offset, int team_size,
         std::int64_t workspace_bytes, const std::string& precision) {
        update_params(s, "update_from_io", lr, lr_scale, rms_beta, rms_eps, clip, seed, lagged,
                      row_offset, team_size, workspace_bytes);
        TernaryCounterPython::parse_precision("update_from_io", precision);
      },
      py::arg("state"), py::kw_only(), py::arg("lr") = d.lr, py::arg("lr_scale") = d.lr_scale,
      py::arg("rms_beta") = d.rms_beta, py::arg("rms_eps") = d.rms_eps, py::arg("clip") = d.clip,
      py::arg("seed") = d.seed, py::arg("lagged") = d.lagged, py::arg("row_offset") = d.row_offset,
      py::arg("team_size") = d.team_size, py::arg("workspace_bytes") = d.workspace_bytes,
      py::arg("precision") = "fp32",
      "Raises ValueError, as update_from_io would, for parameters the library rejects.");
  m.def("save_layers", &save_layers, py::arg("path"), py::arg("layers"), py::arg("step"),
        py::arg("metadata"));
  m.def("load_layers", &load_layers, py::arg("path"), py::arg("layers"));
  m.def("read_checkpoint", &read_checkpoint, py::arg("path"));
  m.def("softmax_cross_entropy", &softmax_cross_entropy, py::arg("logits"), py::arg("labels"),
        py::arg("grad") = py::none(), py::arg("grad_scale") = 1.0f);
  m.def(
      "encode", [](int t, int counter, int C) { return tc::encode(t, counter, C); }, py::arg("t"),
      py::arg("counter"), py::arg("C"), "The code of ternary t and counter c.");
  m.def(
      "decode_ternary", [](int code, int C) { return tc::decode_ternary(code, C); },
      py::arg("code"), py::arg("C"));
  m.def(
      "decode_counter", [](int code, int C) { return tc::decode_counter(code, C); },
      py::arg("code"), py::arg("C"));
  m.def(
      "hash_u32", [](std::uint32_t x) { return tc::hash_u32(x); }, py::arg("x"));
  m.def(
      "step_seed",
      [](std::uint32_t base_seed, std::int64_t step) {
        return tc::TernaryLinear<ExecSpace>::step_seed(base_seed, step);
      },
      py::arg("base_seed"), py::arg("step"));
}
