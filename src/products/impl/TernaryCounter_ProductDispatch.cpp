// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The dispatcher of forward and backward_input (see ProductDispatch.hpp). FP32: on GPUs,
// products of up to 16 samples over aligned rows by FewSampleProduct (not on HIP: Tiling), other
// products of a few samples by SmallBatchProduct, else the tile engine. int8 (SPEC §6): the
// input quantized by rows, then the hosts' few-sample VBMI kernel, the GPUs' few-sample kernel,
// the tensor-core engine (CUDA sm_80+, when asked for: gpu_int8_gemm()), the vendor GEMM (CUDA)
// or the integer engines (AVX2 / VNNI / AMX on hosts, else portable), in that order where each
// serves. 16-bit inputs and outputs: int8 quantizes them as it reads and rounds into them as it
// stores; FP32 runs on the input widened to float.
#include "products/impl/TernaryCounter_ProductDispatch.hpp"

#include "core/TernaryCounter_Validation.hpp"
#include "engines/TernaryCounter_Capabilities.hpp"
#include "engines/TernaryCounter_DecodedBlocks.hpp"
#include "engines/TernaryCounter_ExecutionSpaces.hpp"
#include "engines/TernaryCounter_FewSampleInt8Forward.hpp"
#include "engines/TernaryCounter_HostInt8Gemm.hpp"
#include "engines/TernaryCounter_HostIsa.hpp"
#include "engines/TernaryCounter_Int8Epilogues.hpp"
#include "engines/TernaryCounter_IntegerOperands.hpp"
#include "engines/TernaryCounter_IntegerProduct.hpp"
#include "engines/TernaryCounter_Quantize.hpp"
#include "engines/TernaryCounter_QuantizedRows.hpp"
#include "engines/TernaryCounter_RowQuantizer.hpp"
#include "engines/TernaryCounter_ScratchArena.hpp"
#include "engines/TernaryCounter_TensorCoreInt8.hpp"
#include "engines/TernaryCounter_TileGemm.hpp"
#include "engines/TernaryCounter_TileGemmLaunch.hpp"
#include "engines/TernaryCounter_Widening.hpp"
#include "engines/vendor/TernaryCounter_VendorInt8Product.hpp"
#include "products/impl/TernaryCounter_FewSampleInt8BackwardInput.hpp"
#include "products/impl/TernaryCounter_FewSampleProduct.hpp"
#include "products/impl/TernaryCounter_Fp32Products.hpp"
#include "products/impl/TernaryCounter_SmallBatchProduct.hpp"

#include <cstdint>
#include <string>
#include <type_traits>

namespace TernaryCounter::Impl {

namespace {

/// forward or backward_input: on GPUs, products of up to 16 samples over aligned rows by teams
/// per 32 output columns (not on HIP: Tiling) and other products of a few samples by the
/// small-batch kernel; else by the tile engine. Each kernel launches under its own label,
/// "<call>::<kernel>", so Kokkos Tools tell them apart.
template <class ExecSpace, class Product>
void run_product(const ExecSpace& space, const Product& product, const std::string& call) {
  if constexpr (Capabilities<ExecSpace>::few_sample_fp32) {
    if (run_few_sample_product(space, product, (call + "::few_sample").c_str())) return;
  }
  if constexpr (Capabilities<ExecSpace>::small_batch_fp32) {
    using Small = SmallBatchProduct<ExecSpace, Product>;
    if (Small::serves(product.rows())) {
      Small{product}.run(space, (call + "::small_batch").c_str());
      return;
    }
  }
  run_tile_gemm(space, product, (call + "::tiles").c_str());
}

/// The int8 products' engines (SPEC §6). Each takes the operand quantized by rows, the
/// quantizer being its prologue: an engine that quantizes as it loads takes its place here.
enum class Int8ProductEngine {
  host_few_sample,  ///< hosts with VBMI and VNNI: codes decoded in registers, each weight used M
                    ///< times
  gpu_few_sample,   ///< GPUs: each packed code read once
  tensor_cores,     ///< CUDA sm_80+ where gpu_int8_gemm() asks for it: 8-bit MMAs on codes
                    ///< decoded into shared memory, the epilogue as it stores
  vendor_gemm,      ///< the vendor GEMM over blocks of decoded weights (the integer engine where
                    ///< it declines)
  integer,          ///< the integer engine: AVX2 / VNNI / AMX on hosts (host_isa()), else portable
};

/// Whether forward and backward_input past the few-sample kernels run on the tensor-core engine:
/// built for it, asked for, and a layer it serves.
template <class ExecSpace>
bool runs_tensor_cores(std::int64_t in) {
  return Capabilities<ExecSpace>::tensor_core_int8 &&
         gpu_int8_gemm() == GpuInt8Gemm::tensor_cores && tensor_core_int8_serves(in);
}

template <class ExecSpace>
Int8ProductEngine int8_forward_engine(std::int64_t M, std::int64_t in) {
  using Caps = Capabilities<ExecSpace>;
  if constexpr (Caps::host) {
    if (M <= HostInt8::few_samples && HostInt8::runs_few_sample_forward()) {
      return Int8ProductEngine::host_few_sample;
    }
  }
  if (Caps::few_sample_int8_forward && few_sample_int8_forward_serves(M, in)) {
    return Int8ProductEngine::gpu_few_sample;
  }
  if (runs_tensor_cores<ExecSpace>(in)) return Int8ProductEngine::tensor_cores;
  return Caps::vendor_int8 != VendorInt8Gemm::none ? Int8ProductEngine::vendor_gemm
                                                   : Int8ProductEngine::integer;
}

template <class ExecSpace>
Int8ProductEngine int8_backward_input_engine(std::int64_t M, std::int64_t in) {
  using Caps = Capabilities<ExecSpace>;
  if (Caps::few_sample_int8_gpu && few_sample_backward_input_sums(M, in) > 0) {
    return Int8ProductEngine::gpu_few_sample;
  }
  if (runs_tensor_cores<ExecSpace>(in)) return Int8ProductEngine::tensor_cores;
  return Caps::vendor_int8 != VendorInt8Gemm::none ? Int8ProductEngine::vendor_gemm
                                                   : Int8ProductEngine::integer;
}

template <class ExecSpace, class T, class U>
void forward_int8(const ExecSpace& space,
                  const PackedState<typename ExecSpace::memory_space>& state,
                  const InputView<typename ExecSpace::memory_space, T>& x,
                  const OutputView<typename ExecSpace::memory_space, U>& y) {
  using Mem = typename ExecSpace::memory_space;
  require_int8_bound("forward", "in", state.in(), int8_max_depth);
  const std::int64_t M = x.extent(0);
  const Int8ProductEngine engine = int8_forward_engine<ExecSpace>(M, state.in());
  std::size_t bytes = QuantizedRows<Mem>::bytes(M, state.in());
  if (engine == Int8ProductEngine::vendor_gemm) {
    bytes += vendor_product_scratch<U>(M, state.out(), padded_depth(state.in()));
  }
  ScratchArena<ExecSpace> arena(space, bytes);
  const QuantizedRows<Mem> xq(space, arena, M, state.in());
  RowQuantizer<ExecSpace, false, false, T>{x, {}, xq, 0}.run(space,
                                                             "TernaryCounter::forward::quantize_x");
  const TernaryByColumn<Mem> weights{state.codes, state.C};
  const ForwardEpilogue<Mem, U> epilogue{y, xq.scale, state.scale};
  if constexpr (host_space<ExecSpace>) {
    if (engine == Int8ProductEngine::host_few_sample) {
      space.fence("TernaryCounter::forward::few_samples");
      HostInt8::few_sample_forward(space, Int8Rows<Mem>{xq.q}, xq.sums.data(), weights, M, epilogue,
                                   "TernaryCounter::forward::int8_few_samples");
      return;
    }
  } else {
    if (engine == Int8ProductEngine::gpu_few_sample &&
        few_sample_int8_forward(space, xq.q, xq.sums, state, M, epilogue)) {
      return;
    }
  }
  if constexpr (Capabilities<ExecSpace>::tensor_core_int8) {
    if (engine == Int8ProductEngine::tensor_cores) {
      const std::int64_t depth = xq.q.extent(1);
      TensorCoreInt8Product<ExecSpace, Int8TileRows<Mem>, WeightTileRows<Mem>, decltype(epilogue)>{
          {xq.q}, {{state.codes, state.C}}, epilogue, M, state.out(), depth}
          .run(space, "TernaryCounter::forward::int8_product::tensor_cores");
      return;
    }
  }
  if constexpr (vendor_gemm_space<ExecSpace>) {
    if (engine == Int8ProductEngine::vendor_gemm &&
        vendor_product<DecodeWeightRows>(space, arena, state, xq, y, epilogue,
                                         "TernaryCounter::forward::int8_epilogue")) {
      return;
    }
  }
  run_integer_product(space, host_isa().int8_engine, xq, weights, state.C, M, state.out(), epilogue,
                      "TernaryCounter::forward::int8_product");
}

template <class ExecSpace, class T, class U>
void backward_input_int8(const ExecSpace& space,
                         const PackedState<typename ExecSpace::memory_space>& state,
                         const InputView<typename ExecSpace::memory_space, T>& grad_out,
                         const OutputView<typename ExecSpace::memory_space, U>& grad_x,
                         std::uint32_t seed, std::int64_t sample_offset) {
  using Mem = typename ExecSpace::memory_space;
  require_int8_bound("backward_input", "out", state.out(), int8_max_depth);
  const std::int64_t M = grad_out.extent(0);
  const Int8ProductEngine engine = int8_backward_input_engine<ExecSpace>(M, state.in());
  std::size_t bytes = QuantizedRows<Mem>::bytes(M, state.out());
  if (engine == Int8ProductEngine::gpu_few_sample) {
    bytes += scratch_bytes<std::int32_t>(few_sample_backward_input_sums(M, state.in()));
  } else if (engine == Int8ProductEngine::vendor_gemm) {
    bytes += vendor_product_scratch<U>(M, state.in(), padded_depth(state.out()));
  }
  ScratchArena<ExecSpace> arena(space, bytes);
  const QuantizedRows<Mem> hq(space, arena, M, state.out());
  RowQuantizer<ExecSpace, true, true, T>{grad_out, state.scale, hq,
                                         stream_key(seed, int8_backward_input_tag), sample_offset}
      .run(space, "TernaryCounter::backward_input::quantize_grad_out");
  const BackwardInputEpilogue<Mem, U> epilogue{grad_x, hq.scale};
  if constexpr (Capabilities<ExecSpace>::tensor_core_int8) {
    if (engine == Int8ProductEngine::tensor_cores) {
      const std::int64_t depth = hq.q.extent(1);
      TensorCoreInt8Product<ExecSpace, Int8TileRows<Mem>, WeightTileColumns<Mem>,
                            decltype(epilogue)>{
          {hq.q}, {{state.codes, state.C}}, epilogue, M, state.in(), depth}
          .run(space, "TernaryCounter::backward_input::int8_product::tensor_cores");
      return;
    }
  }
  if constexpr (vendor_gemm_space<ExecSpace>) {  // (HIP: the integer engine, unmeasured there)
    if (engine == Int8ProductEngine::gpu_few_sample) {
      const Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Mem> sums(
          arena.template take<std::int32_t>(M * state.in()), M, state.in());
      few_sample_int8_backward_input(space, hq.q, hq.sums, state, M, sums, epilogue);
      return;
    }
    if (engine == Int8ProductEngine::vendor_gemm &&
        vendor_product<DecodeWeightColumns>(space, arena, state, hq, grad_x, epilogue,
                                            "TernaryCounter::backward_input::int8_epilogue")) {
      return;
    }
  }
  run_integer_product(space, host_isa().int8_engine, hq, TernaryByDepth<Mem>{state.codes, state.C},
                      state.C, M, state.in(), epilogue,
                      "TernaryCounter::backward_input::int8_product");
}

/// A product of a 16-bit input on the FP32 engines: the input widened, `dispatch(input, output)`
/// on floats, and a 16-bit output rounded from its float result.
template <class ExecSpace, class T, class U, class Dispatch>
void widened_product(const ExecSpace& space,
                     const InputView<typename ExecSpace::memory_space, T>& input,
                     const OutputView<typename ExecSpace::memory_space, U>& output,
                     const Dispatch& dispatch, const std::string& call) {
  constexpr bool float_output = std::is_same_v<U, float>;
  ScratchArena<ExecSpace, WideningScratch> arena(
      space, widened_bytes(input.extent(0), input.extent(1)) +
                 (float_output ? 0 : widened_bytes(output.extent(0), output.extent(1))));
  const auto input_float = widened(space, arena, input, (call + "::widen").c_str());
  if constexpr (float_output) {
    dispatch(input_float, output);
  } else {
    const auto output_float = float_result(arena, output);
    dispatch(input_float, output_float);
    narrow_into(space, output_float, output, (call + "::narrow").c_str());
  }
}

}  // namespace

template <class ExecSpace, class T, class U>
void dispatch_forward(const ExecSpace& space,
                      const PackedState<typename ExecSpace::memory_space>& state,
                      const InputView<typename ExecSpace::memory_space, T>& x,
                      const OutputView<typename ExecSpace::memory_space, U>& y,
                      const ProductOptions& options) {
  if (options.precision == Precision::int8) {
    forward_int8(space, state, x, y);
    return;
  }
  using Mem = typename ExecSpace::memory_space;
  if constexpr (std::is_same_v<T, float> && std::is_same_v<U, float>) {
    const ForwardProduct<Mem> product{MatrixOperand<Mem, true>(x, 0, state.in(), x.extent(0)),
                                      TernaryOperand<Mem, true>(state.codes, state.scale, state.C),
                                      y};
    run_product(space, product, "TernaryCounter::forward");
  } else {
    widened_product(
        space, x, y,
        [&](const InputView<Mem>& input, const OutputView<Mem>& output) {
          dispatch_forward(space, state, input, output, options);
        },
        "TernaryCounter::forward");
  }
}

template <class ExecSpace, class T, class U>
void dispatch_backward_input(const ExecSpace& space,
                             const PackedState<typename ExecSpace::memory_space>& state,
                             const InputView<typename ExecSpace::memory_space, T>& grad_out,
                             const OutputView<typename ExecSpace::memory_space, U>& grad_x,
                             const ProductOptions& options) {
  if (options.precision == Precision::int8) {
    backward_input_int8(space, state, grad_out, grad_x, options.seed, options.sample_offset);
    return;
  }
  using Mem = typename ExecSpace::memory_space;
  if constexpr (std::is_same_v<T, float> && std::is_same_v<U, float>) {
    const BackwardInputProduct<Mem> product{
        MatrixOperand<Mem, true>(grad_out, 0, state.out(), grad_out.extent(0)),
        TernaryOperand<Mem, false>(state.codes, state.scale, state.C), grad_x};
    run_product(space, product, "TernaryCounter::backward_input");
  } else {
    widened_product(
        space, grad_out, grad_x,
        [&](const InputView<Mem>& input, const OutputView<Mem>& output) {
          dispatch_backward_input(space, state, input, output, options);
        },
        "TernaryCounter::backward_input");
  }
}

#define TERNARYCOUNTER_INSTANTIATE_PRODUCT_DISPATCH_TYPES(SPACE, T, U)                     \
  template void dispatch_forward<SPACE, T, U>(                                             \
      const SPACE&, const PackedState<SPACE::memory_space>&,                               \
      const InputView<SPACE::memory_space, T>&, const OutputView<SPACE::memory_space, U>&, \
      const ProductOptions&);                                                              \
  template void dispatch_backward_input<SPACE, T, U>(                                      \
      const SPACE&, const PackedState<SPACE::memory_space>&,                               \
      const InputView<SPACE::memory_space, T>&, const OutputView<SPACE::memory_space, U>&, \
      const ProductOptions&);
#define TERNARYCOUNTER_INSTANTIATE_PRODUCT_DISPATCH(SPACE)                     \
  TERNARYCOUNTER_INSTANTIATE_PRODUCT_DISPATCH_TYPES(SPACE, float, float)       \
  TERNARYCOUNTER_INSTANTIATE_PRODUCT_DISPATCH_TYPES(SPACE, bfloat16, float)    \
  TERNARYCOUNTER_INSTANTIATE_PRODUCT_DISPATCH_TYPES(SPACE, bfloat16, bfloat16) \
  TERNARYCOUNTER_INSTANTIATE_PRODUCT_DISPATCH_TYPES(SPACE, float16, float)     \
  TERNARYCOUNTER_INSTANTIATE_PRODUCT_DISPATCH_TYPES(SPACE, float16, float16)

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_PRODUCT_DISPATCH)

}  // namespace TernaryCounter::Impl
