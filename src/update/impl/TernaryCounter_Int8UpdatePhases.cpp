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

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

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
void int8_quantize_operands(const ExecSpace& space,
                            const InputView<typename ExecSpace::memory_space>& x,
                            const InputView<typename ExecSpace::memory_space>& grad_out,
                            const AbsmaxBits<typename ExecSpace::memory_space>& amax_bits,
                            std::uint32_t seed, std::int64_t row_offset,
                            std::int64_t stream_samples, std::int64_t sample_offset,
                            Int8GradientOperands<typename ExecSpace::memory_space>& operands) {
  using Mem = typename ExecSpace::memory_space;
  const std::int64_t M = x.extent(0), in = x.extent(1), out = grad_out.extent(1);
  // Hosts: xq [M, in] (ColumnQuantizer); GPUs: xq transposed, [in, Mp] (TiledColumnQuantizer).
  constexpr bool tiled_columns = !host_space<ExecSpace>;
  const std::int64_t xq_rows = tiled_columns ? in : M;
  const std::int64_t xq_cols = tiled_columns ? padded_depth(M) : in;
  const auto sized = [](auto& view, const char* label, auto... extents) {
    const std::int64_t want[] = {std::int64_t(extents)...};
    bool same = true;
    for (std::size_t d = 0; d < sizeof...(extents); ++d) {
      same = same && std::int64_t(view.extent(d)) == want[d];
    }
    if (!same) {
      using View = std::decay_t<decltype(view)>;
      view = View(Kokkos::view_alloc(std::string("TernaryCounter::int8_operands::") + label,
                                     Kokkos::WithoutInitializing),
                  extents...);
    }
  };
  sized(operands.xq, "xq", xq_rows, xq_cols);
  sized(operands.x_scale, "x_scale", in);
  sized(operands.gq, "gq", out + int8_padding_rows, padded_depth(M));
  sized(operands.gq_scale, "gq_scale", out);
  sized(operands.gq_sums, "gq_sums", out);
  Kokkos::deep_copy(
      space,
      Kokkos::subview(operands.gq, std::make_pair(out, out + int8_padding_rows), Kokkos::ALL),
      std::int8_t(0));
  if (M == 0) return;  // no samples: int8_gradient_rows writes G_r = 0
  const std::uint32_t key = stream_key(seed, int8_weight_gradient_tag);
  if constexpr (!tiled_columns) {
    QuantizedRows<Mem> gq;
    gq.q = operands.gq;
    gq.scale = operands.gq_scale;
    gq.sums = operands.gq_sums;
    ColumnQuantizer<ExecSpace> columns{x,  grad_out, operands.xq, operands.x_scale,
                                       gq, key,      row_offset};
    columns.stream_samples = stream_samples;
    columns.sample_offset = sample_offset;
    columns.amax_bits = amax_bits;
    columns.pass = ColumnPass::quantize;
    columns.run(space, "TernaryCounter::Distributed::quantize_columns");
  } else {
    TiledColumnQuantizer<ExecSpace> columns{
        x,           grad_out,          operands.xq,      operands.x_scale,
        operands.gq, operands.gq_scale, operands.gq_sums, amax_bits,
        key,         row_offset};
    columns.stream_samples = stream_samples;
    columns.sample_offset = sample_offset;
    columns.run_quantize(space);
  }
}

template <class ExecSpace>
void int8_gradient_rows(const ExecSpace& space,
                        const Int8GradientOperands<typename ExecSpace::memory_space>& operands,
                        std::int64_t first_row,
                        const IntegerSums<typename ExecSpace::memory_space>& sums) {
  using Mem = typename ExecSpace::memory_space;
  const std::int64_t rows = sums.extent(0), in = sums.extent(1);
  if (rows == 0) return;
  if (operands.gq.extent(1) == 0) {  // no samples: G_r = 0
    Kokkos::deep_copy(space, sums, 0);
    return;
  }
  const std::pair<std::int64_t, std::int64_t> range(first_row, first_row + rows);
  QuantizedRows<Mem> part;
  part.q = Kokkos::subview(operands.gq, range, Kokkos::ALL);
  part.scale = Kokkos::subview(operands.gq_scale, range);
  part.sums = Kokkos::subview(operands.gq_sums, range);
  const IntegerSumsEpilogue<Mem> epilogue{sums};
  const char* label = "TernaryCounter::Distributed::int8_gradient_sums";
  if constexpr (host_space<ExecSpace>) {
    run_integer_product(space, host_isa().int8_engine, part, Int8ByDepth<Mem>{operands.xq}, 2, rows,
                        in, epilogue, label);
  } else {
    const std::int64_t depth = part.q.extent(1);
    if (!vendor_int8_gemm(space, rows, in, depth, part.q.data(), depth, operands.xq.data(), depth,
                          reinterpret_cast<float*>(sums.data()), sums.stride(0))) {
      PortableIntegerProduct<ExecSpace, Int8ByColumn<Mem>, IntegerSumsEpilogue<Mem>>{
          Int8Rows<Mem>{part.q}, Int8ByColumn<Mem>{operands.xq}, epilogue, rows, in, depth / 4}
          .run(space, label);
    }
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
  Int8GradientOperands<typename ExecSpace::memory_space> operands;
  int8_quantize_operands(space, x, grad_out, amax_bits, seed, row_offset, stream_samples,
                         sample_offset, operands);
  int8_gradient_rows(space, operands, 0, sums);
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
  template void int8_quantize_operands<SPACE>(                                                    \
      const SPACE&, const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&, \
      const AbsmaxBits<SPACE::memory_space>&, std::uint32_t, std::int64_t, std::int64_t,          \
      std::int64_t, Int8GradientOperands<SPACE::memory_space>&);                                  \
  template void int8_gradient_rows<SPACE>(const SPACE&,                                           \
                                          const Int8GradientOperands<SPACE::memory_space>&,       \
                                          std::int64_t, const IntegerSums<SPACE::memory_space>&); \
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
