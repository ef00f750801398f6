// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The dispatcher of forward and backward_input (see ProductDispatch.hpp). FP32: on GPUs,
// products of up to 16 samples over aligned rows by FewSampleProduct (not on HIP: Tiling), other
// products of a few samples by SmallBatchProduct, else the tile engine. int8 (SPEC §6): the
// input quantized by rows, then the hosts' few-sample VBMI kernel, the GPUs' few-sample kernel,
// the vendor GEMM (CUDA) or the integer engines (VNNI / AMX on hosts, else portable), in that
// order where each serves.
#include "products/impl/TernaryCounter_ProductDispatch.hpp"

#include "core/impl/TernaryCounter_ExecutionSpaces.hpp"
#include "core/impl/TernaryCounter_HostIsa.hpp"
#include "core/impl/TernaryCounter_ScratchArena.hpp"
#include "core/impl/TernaryCounter_Validation.hpp"
#include "products/impl/TernaryCounter_DecodedBlocks.hpp"
#include "products/impl/TernaryCounter_FewSampleInt8BackwardInput.hpp"
#include "products/impl/TernaryCounter_FewSampleInt8Forward.hpp"
#include "products/impl/TernaryCounter_FewSampleProduct.hpp"
#include "products/impl/TernaryCounter_Fp32Products.hpp"
#include "products/impl/TernaryCounter_HostInt8Gemm.hpp"
#include "products/impl/TernaryCounter_Int8Epilogues.hpp"
#include "products/impl/TernaryCounter_IntegerOperands.hpp"
#include "products/impl/TernaryCounter_IntegerProduct.hpp"
#include "products/impl/TernaryCounter_SmallBatchProduct.hpp"
#include "products/impl/TernaryCounter_TileGemm.hpp"
#include "products/impl/TernaryCounter_TileGemmLaunch.hpp"
#include "quantize/impl/TernaryCounter_Quantize.hpp"
#include "quantize/impl/TernaryCounter_QuantizedRows.hpp"
#include "quantize/impl/TernaryCounter_RowQuantizer.hpp"
#include "vendor/TernaryCounter_VendorInt8Product.hpp"

#include <cstdint>
#include <string>

namespace TernaryCounter::Impl {

namespace {

/// forward or backward_input: on GPUs, products of up to 16 samples over aligned rows by teams
/// per 32 output columns (not on HIP: Tiling) and other products of a few samples by the
/// small-batch kernel; else by the tile engine. Each kernel launches under its own label,
/// "<call>::<kernel>", so Kokkos Tools tell them apart.
template <class ExecSpace, class Product>
void run_product(const ExecSpace& space, const Product& product, const std::string& call) {
  if constexpr (Tiling<ExecSpace>::few_sample) {
    if (run_few_sample_product(space, product, (call + "::few_sample").c_str())) return;
  }
  if constexpr (Tiling<ExecSpace>::small_batch) {
    using Small = SmallBatchProduct<ExecSpace, Product>;
    if (Small::serves(product.rows())) {
      Small{product}.run(space, (call + "::small_batch").c_str());
      return;
    }
  }
  run_tile_gemm(space, product, (call + "::tiles").c_str());
}

template <class ExecSpace>
void forward_int8(const ExecSpace& space,
                  const PackedState<typename ExecSpace::memory_space>& state,
                  const InputView<typename ExecSpace::memory_space>& x,
                  const OutputView<typename ExecSpace::memory_space>& y) {
  using Mem = typename ExecSpace::memory_space;
  require_int8_bound("forward", "in", state.in(), int8_max_depth);
  const std::int64_t M = x.extent(0);
  std::size_t bytes = QuantizedRows<Mem>::bytes(M, state.in());
  if constexpr (vendor_gemm_space<ExecSpace>) {
    bytes += decoded_block_scratch(state.out(), padded_depth(state.in()));
  }
  ScratchArena<ExecSpace> arena(space, bytes);
  const QuantizedRows<Mem> xq(space, arena, M, state.in());
  RowQuantizer<ExecSpace, false, false>{x, {}, xq, 0}.run(space,
                                                          "TernaryCounter::forward::quantize_x");
  const TernaryByColumn<Mem> weights{state.codes, state.C};
  const ForwardEpilogue<Mem> epilogue{y, xq.scale, state.scale};
  const HostIsa isa = host_isa();
  if constexpr (host_space<ExecSpace>) {
    // A few samples: each weight is used M times, so decoding in registers beats packing panels.
    if (M <= HostInt8::few_samples && isa.int8_engine != HostInt8Engine::portable && isa.vbmi) {
      space.fence("TernaryCounter::forward::few_samples");
      HostInt8::few_sample_forward(space, Int8Rows<Mem>{xq.q}, xq.sums.data(), weights, M, epilogue,
                                   "TernaryCounter::forward::int8_few_samples");
      return;
    }
  }
  if constexpr (!host_space<ExecSpace>) {  // hosts have their own (VBMI, above)
    if (few_sample_int8_forward(space, xq.q, xq.sums, state, M, epilogue)) return;
  }
  if constexpr (vendor_gemm_space<ExecSpace>) {
    if (vendor_product<DecodeWeightRows>(space, arena, state, xq, y, epilogue,
                                         "TernaryCounter::forward::int8_epilogue")) {
      return;
    }
  }
  run_integer_product(space, isa.int8_engine, xq, weights, state.C, M, state.out(), epilogue,
                      "TernaryCounter::forward::int8_product");
}

template <class ExecSpace>
void backward_input_int8(const ExecSpace& space,
                         const PackedState<typename ExecSpace::memory_space>& state,
                         const InputView<typename ExecSpace::memory_space>& grad_out,
                         const OutputView<typename ExecSpace::memory_space>& grad_x,
                         std::uint32_t seed, std::int64_t sample_offset) {
  using Mem = typename ExecSpace::memory_space;
  require_int8_bound("backward_input", "out", state.out(), int8_max_depth);
  const std::int64_t M = grad_out.extent(0);
  std::size_t bytes = QuantizedRows<Mem>::bytes(M, state.out());
  const std::int64_t few_sample_sums = few_sample_backward_input_sums(M, state.in());
  if constexpr (vendor_gemm_space<ExecSpace>) {
    bytes += few_sample_sums > 0 ? scratch_bytes<std::int32_t>(few_sample_sums)
                                 : decoded_block_scratch(state.in(), padded_depth(state.out()));
  }
  ScratchArena<ExecSpace> arena(space, bytes);
  const QuantizedRows<Mem> hq(space, arena, M, state.out());
  RowQuantizer<ExecSpace, true, true>{grad_out, state.scale, hq,
                                      stream_key(seed, int8_backward_input_tag), sample_offset}
      .run(space, "TernaryCounter::backward_input::quantize_grad_out");
  const BackwardInputEpilogue<Mem> epilogue{grad_x, hq.scale};
  if constexpr (vendor_gemm_space<ExecSpace>) {  // (HIP: the portable kernel, unmeasured there)
    if (few_sample_sums > 0) {
      const Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Mem> sums(
          arena.template take<std::int32_t>(few_sample_sums), M, state.in());
      few_sample_int8_backward_input(space, hq.q, hq.sums, state, M, sums, epilogue);
      return;
    }
    if (vendor_product<DecodeWeightColumns>(space, arena, state, hq, grad_x, epilogue,
                                            "TernaryCounter::backward_input::int8_epilogue")) {
      return;
    }
  }
  run_integer_product(space, host_isa().int8_engine, hq, TernaryByDepth<Mem>{state.codes, state.C},
                      state.C, M, state.in(), epilogue,
                      "TernaryCounter::backward_input::int8_product");
}

}  // namespace

template <class ExecSpace>
void dispatch_forward(const ExecSpace& space,
                      const PackedState<typename ExecSpace::memory_space>& state,
                      const InputView<typename ExecSpace::memory_space>& x,
                      const OutputView<typename ExecSpace::memory_space>& y,
                      const ProductOptions& options) {
  if (options.precision == Precision::int8) {
    forward_int8(space, state, x, y);
    return;
  }
  using Mem = typename ExecSpace::memory_space;
  const ForwardProduct<Mem> product{MatrixOperand<Mem, true>(x, 0, state.in(), x.extent(0)),
                                    TernaryOperand<Mem, true>(state.codes, state.scale, state.C),
                                    y};
  run_product(space, product, "TernaryCounter::forward");
}

template <class ExecSpace>
void dispatch_backward_input(const ExecSpace& space,
                             const PackedState<typename ExecSpace::memory_space>& state,
                             const InputView<typename ExecSpace::memory_space>& grad_out,
                             const OutputView<typename ExecSpace::memory_space>& grad_x,
                             const ProductOptions& options) {
  if (options.precision == Precision::int8) {
    backward_input_int8(space, state, grad_out, grad_x, options.seed, options.sample_offset);
    return;
  }
  using Mem = typename ExecSpace::memory_space;
  const BackwardInputProduct<Mem> product{
      MatrixOperand<Mem, true>(grad_out, 0, state.out(), grad_out.extent(0)),
      TernaryOperand<Mem, false>(state.codes, state.scale, state.C), grad_x};
  run_product(space, product, "TernaryCounter::backward_input");
}

#define TERNARYCOUNTER_INSTANTIATE_PRODUCT_DISPATCH(SPACE)                                     \
  template void dispatch_forward<SPACE>(const SPACE&, const PackedState<SPACE::memory_space>&, \
                                        const InputView<SPACE::memory_space>&,                 \
                                        const OutputView<SPACE::memory_space>&,                \
                                        const ProductOptions&);                                \
  template void dispatch_backward_input<SPACE>(                                                \
      const SPACE&, const PackedState<SPACE::memory_space>&,                                   \
      const InputView<SPACE::memory_space>&, const OutputView<SPACE::memory_space>&,           \
      const ProductOptions&);

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_PRODUCT_DISPATCH)

}  // namespace TernaryCounter::Impl
