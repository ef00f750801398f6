// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "update/impl/TernaryCounter_Int8UpdatePhases.hpp"

#include "core/impl/TernaryCounter_ExecutionSpaces.hpp"
#include "core/impl/TernaryCounter_HostIsa.hpp"
#include "core/impl/TernaryCounter_ScratchArena.hpp"
#include "products/impl/TernaryCounter_Int8Epilogues.hpp"
#include "products/impl/TernaryCounter_IntegerOperands.hpp"
#include "products/impl/TernaryCounter_IntegerProduct.hpp"
#include "quantize/impl/TernaryCounter_ColumnQuantizer.hpp"
#include "quantize/impl/TernaryCounter_Quantize.hpp"
#include "quantize/impl/TernaryCounter_QuantizedRows.hpp"
#include "quantize/impl/TernaryCounter_TiledColumnQuantizer.hpp"
#include "update/impl/TernaryCounter_RowUpdateKernel.hpp"
#include "vendor/TernaryCounter_VendorInt8Product.hpp"

#include <cstdint>

namespace TernaryCounter::Impl {

template <class ExecSpace>
void int8_column_absmax(const ExecSpace& space,
                        const InputView<typename ExecSpace::memory_space>& x,
                        const InputView<typename ExecSpace::memory_space>& grad_out,
                        const AbsmaxBits<typename ExecSpace::memory_space>& amax_bits) {
  if constexpr (host_space<ExecSpace>) {
    ColumnQuantizer<ExecSpace> columns{x, grad_out, {}, {}, {}};
    columns.amax_bits = amax_bits;
    columns.pass = ColumnPass::absmax;
    columns.run(space, "TernaryCounter::Distributed::column_absmax");
  } else {
    TiledColumnQuantizer<ExecSpace>{x, grad_out, {}, {}, {}, {}, {}, amax_bits}.run_absmax(space);
  }
}

template <class ExecSpace>
void int8_gradient_sums(const ExecSpace& space,
                        const InputView<typename ExecSpace::memory_space>& x,
                        const InputView<typename ExecSpace::memory_space>& grad_out,
                        const AbsmaxBits<typename ExecSpace::memory_space>& amax_bits,
                        std::uint32_t seed, std::int64_t row_offset, std::int64_t stream_samples,
                        std::int64_t sample_offset,
                        const IntegerSums<typename ExecSpace::memory_space>& sums) {
  using Mem = typename ExecSpace::memory_space;
  const std::int64_t M = x.extent(0), in = x.extent(1), out = grad_out.extent(1);
  if (M == 0) {  // no samples: G_r = 0
    Kokkos::deep_copy(space, sums, 0);
    return;
  }
  constexpr bool tiled_columns = !host_space<ExecSpace>;
  const std::int64_t xq_rows = tiled_columns ? in : M;
  const std::int64_t xq_cols = tiled_columns ? padded_depth(M) : in;
  ScratchArena<ExecSpace> arena(space, scratch_bytes<std::int8_t>(xq_rows * xq_cols) +
                                           scratch_bytes<float>(in) +
                                           QuantizedRows<Mem>::bytes(out, M));
  const Int8Matrix<Mem> xq(arena.template take<std::int8_t>(xq_rows * xq_cols), xq_rows, xq_cols);
  const FloatVector<Mem> x_scale(arena.template take<float>(in), in);
  const QuantizedRows<Mem> gq(space, arena, out, M);
  const std::uint32_t key = stream_key(seed, int8_weight_gradient_tag);
  const IntegerSumsEpilogue<Mem> epilogue{sums};
  const char* label = "TernaryCounter::Distributed::int8_gradient_sums";
  if constexpr (!tiled_columns) {
    ColumnQuantizer<ExecSpace> columns{x, grad_out, xq, x_scale, gq, key, row_offset};
    columns.stream_samples = stream_samples;
    columns.sample_offset = sample_offset;
    columns.amax_bits = amax_bits;
    columns.pass = ColumnPass::quantize;
    columns.run(space, "TernaryCounter::Distributed::quantize_columns");
    run_integer_product(space, host_isa().int8_engine, gq, Int8ByDepth<Mem>{xq}, 2, out, in,
                        epilogue, label);
  } else {
    TiledColumnQuantizer<ExecSpace> columns{x,        grad_out, xq,        x_scale, gq.q,
                                            gq.scale, gq.sums,  amax_bits, key,     row_offset};
    columns.stream_samples = stream_samples;
    columns.sample_offset = sample_offset;
    columns.run_quantize(space);
    const std::int64_t depth = gq.q.extent(1);
    if (!vendor_int8_gemm(space, out, in, depth, gq.q.data(), depth, xq.data(), depth,
                          reinterpret_cast<float*>(sums.data()), sums.stride(0))) {
      PortableIntegerProduct<ExecSpace, Int8ByColumn<Mem>, IntegerSumsEpilogue<Mem>>{
          Int8Rows<Mem>{gq.q}, Int8ByColumn<Mem>{xq}, epilogue, out, in, depth / 4}
          .run(space, label);
    }
  }
}

template <class ExecSpace>
void int8_update_from_sums(const ExecSpace& space,
                           const PackedState<typename ExecSpace::memory_space>& rows,
                           const IntegerSums<typename ExecSpace::memory_space>& sums,
                           const AbsmaxBits<typename ExecSpace::memory_space>& amax_bits,
                           std::int64_t first_row, const UpdateParams& params,
                           const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows) {
  using Mem = typename ExecSpace::memory_space;
  const std::int64_t n = rows.out(), in = rows.in();
  const UpdateConstants k = make_update_constants(params, n, in);
  Kokkos::deep_copy(space, skipped_rows, std::int64_t(0));
  if (n == 0) return;
  // g = float(G) * (sg * sx), GradientEpilogue's arithmetic, in place over G.
  const Kokkos::View<float**, Kokkos::LayoutRight, Mem> gradient(
      reinterpret_cast<float*>(sums.data()), n, in);
  Kokkos::parallel_for(
      "TernaryCounter::Distributed::int8_gradient",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>(space, {0, 0}, {n, in}),
      KOKKOS_LAMBDA(std::int64_t r, std::int64_t i) {
        const float sg = dequantization_scale(absmax_from_bits(amax_bits(in + first_row + r)));
        const float sx = dequantization_scale(absmax_from_bits(amax_bits(i)));
        gradient(r, i) = float(sums(r, i)) * (sg * sx);
      });
  RowUpdateKernel<ExecSpace> row_update{rows.codes, rows.scale, rows.v, gradient, k, skipped_rows};
  row_update.enqueue(space, params.team_size);
}

#define TERNARYCOUNTER_INSTANTIATE_INT8_UPDATE_PHASES(SPACE)                                      \
  template void int8_column_absmax<SPACE>(const SPACE&, const InputView<SPACE::memory_space>&,    \
                                          const InputView<SPACE::memory_space>&,                  \
                                          const AbsmaxBits<SPACE::memory_space>&);                \
  template void int8_gradient_sums<SPACE>(                                                        \
      const SPACE&, const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&, \
      const AbsmaxBits<SPACE::memory_space>&, std::uint32_t, std::int64_t, std::int64_t,          \
      std::int64_t, const IntegerSums<SPACE::memory_space>&);                                     \
  template void int8_update_from_sums<SPACE>(                                                     \
      const SPACE&, const PackedState<SPACE::memory_space>&,                                      \
      const IntegerSums<SPACE::memory_space>&, const AbsmaxBits<SPACE::memory_space>&,            \
      std::int64_t, const UpdateParams&, const SkippedRowsView<SPACE::memory_space>&);

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_INT8_UPDATE_PHASES)

}  // namespace TernaryCounter::Impl
