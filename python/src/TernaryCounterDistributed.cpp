// The integer path's data-parallel phases over tensor memory (SPEC §7), for
// ternarycounter.distributed: torch.distributed moves the data between them.
//   tensor_int8_column_absmax     this rank's column absmax bits [in + out] (int32 tensor: the
//                                 bits of non-negative floats are below 2^31 and order as ints)
//   tensor_int8_gradient_sums     this rank's int32 sums G_r [out, in] on the global streams
//   tensor_int8_update_from_sums  the row update of a block of rows from their summed G
// Host memory runs on the host execution space; CUDA memory on the Kokkos::Cuda instance of
// torch's current stream (as the layer's other calls).
#include "TernaryCounterTensors.hpp"

#include <TernaryCounter.hpp>
#include "TernaryCounter_DataParallelPhases.hpp"

#include <Kokkos_Core.hpp>

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <type_traits>

namespace py = pybind11;
namespace tc = TernaryCounter;

namespace TernaryCounterPython {

namespace {

using HostSpace = Kokkos::DefaultHostExecutionSpace;

template <class Mem>
tc::Experimental::AbsmaxBits<Mem> absmax_at(std::uintptr_t address, std::int64_t n) {
  return tc::Experimental::AbsmaxBits<Mem>(reinterpret_cast<std::uint32_t*>(address), n);
}

template <class Mem>
tc::Experimental::IntegerSums<Mem> sums_at(std::uintptr_t address, std::int64_t rows,
                                           std::int64_t cols) {
  return tc::Experimental::IntegerSums<Mem>(reinterpret_cast<std::int32_t*>(address), rows, cols);
}

void require(bool ok, const std::string& what) {
  if (!ok) throw py::value_error("ternarycounter.distributed: " + what);
}

void tensor_int8_column_absmax(std::int64_t device, std::uintptr_t stream, std::uintptr_t x,
                               std::uintptr_t grad_out, std::int64_t rows, std::int64_t out,
                               std::int64_t in, std::uintptr_t absmax) {
  require(rows >= 0 && out >= 1 && in >= 4 && in % 4 == 0, "bad extents");
  on_device("ternarycounter.distributed", device, stream, [&](const auto& space) {
    using Mem = typename std::decay_t<decltype(space)>::memory_space;
    tc::Experimental::int8_column_absmax(space, input_at<Mem>(x, rows, in),
                                         input_at<Mem>(grad_out, rows, out),
                                         absmax_at<Mem>(absmax, in + out));
  });
}

void tensor_int8_gradient_sums(std::int64_t device, std::uintptr_t stream, std::uintptr_t x,
                               std::uintptr_t grad_out, std::int64_t rows, std::int64_t out,
                               std::int64_t in, std::uintptr_t absmax, std::uint32_t seed,
                               std::int64_t global_samples, std::int64_t sample_offset,
                               std::uintptr_t sums) {
  require(rows >= 0 && out >= 1 && in >= 4 && in % 4 == 0, "bad extents");
  require(sample_offset >= 0 && sample_offset + rows <= global_samples,
          "the block's samples are not within the global batch");
  on_device("ternarycounter.distributed", device, stream, [&](const auto& space) {
    using Mem = typename std::decay_t<decltype(space)>::memory_space;
    tc::Experimental::int8_gradient_sums(space, input_at<Mem>(x, rows, in),
                                         input_at<Mem>(grad_out, rows, out),
                                         absmax_at<Mem>(absmax, in + out), seed, 0, global_samples,
                                         sample_offset, sums_at<Mem>(sums, out, in));
  });
}

void tensor_int8_update_from_sums(std::int64_t device, std::uintptr_t stream, std::uintptr_t codes,
                                  std::uintptr_t scale, std::uintptr_t v, std::int64_t first_row,
                                  std::int64_t rows, std::int64_t out, std::int64_t in, int C,
                                  std::uintptr_t sums, std::uintptr_t absmax,
                                  std::uintptr_t skipped, double lr, double lr_scale,
                                  double rms_beta, double rms_eps, double clip, std::uint32_t seed,
                                  bool lagged) {
  require(first_row >= 0 && rows >= 0 && first_row + rows <= out, "the rows are not the layer's");
  tc::UpdateParams p = recipe_params(C, lr, lr_scale, rms_beta, rms_eps, clip, seed, lagged);
  p.row_offset = first_row;
  p.validate();
  on_device("ternarycounter.distributed", device, stream, [&](const auto& space) {
    using Mem = typename std::decay_t<decltype(space)>::memory_space;
    const auto block = state_at<Mem>(codes, scale, v, rows, in, C);
    tc::Experimental::int8_update_from_sums(
        space, block, sums_at<Mem>(sums, rows, in), absmax_at<Mem>(absmax, in + out), first_row, p,
        tc::SkippedRowsView<Mem>(reinterpret_cast<std::int64_t*>(skipped)));
  });
}

}  // namespace

void register_distributed_calls(py::module_& m) {
  m.def("tensor_int8_column_absmax", &tensor_int8_column_absmax, py::arg("device"),
        py::arg("stream"), py::arg("x"), py::arg("grad_out"), py::arg("rows"), py::arg("out"),
        py::arg("in_"), py::arg("absmax"));
  m.def("tensor_int8_gradient_sums", &tensor_int8_gradient_sums, py::arg("device"),
        py::arg("stream"), py::arg("x"), py::arg("grad_out"), py::arg("rows"), py::arg("out"),
        py::arg("in_"), py::arg("absmax"), py::arg("seed"), py::arg("global_samples"),
        py::arg("sample_offset"), py::arg("sums"));
  m.def("tensor_int8_update_from_sums", &tensor_int8_update_from_sums, py::arg("device"),
        py::arg("stream"), py::arg("codes"), py::arg("scale"), py::arg("v"), py::arg("first_row"),
        py::arg("rows"), py::arg("out"), py::arg("in_"), py::arg("C"), py::arg("sums"),
        py::arg("absmax"), py::arg("skipped"), py::arg("lr"), py::arg("lr_scale"),
        py::arg("rms_beta"), py::arg("rms_eps"), py::arg("clip"), py::arg("seed"),
        py::arg("lagged"));
}

}  // namespace TernaryCounterPython
