// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TernaryCounter_DataParallelPhases.hpp"

#include "core/TernaryCounter_Reallocate.hpp"
#include "core/TernaryCounter_Validation.hpp"
#include "engines/TernaryCounter_ColumnQuantizer.hpp"
#include "engines/TernaryCounter_ExecutionSpaces.hpp"
#include "engines/TernaryCounter_Int8Epilogues.hpp"
#include "engines/TernaryCounter_Quantize.hpp"
#include "engines/TernaryCounter_QuantizedRows.hpp"
#include "engines/TernaryCounter_ScratchArena.hpp"
#include "engines/TernaryCounter_TiledColumnQuantizer.hpp"
#include "update/impl/TernaryCounter_Int8GradientEngine.hpp"
#include "update/impl/TernaryCounter_RowUpdateKernel.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace TernaryCounter::Experimental {

using namespace Impl;

namespace {

/// The checks every phase makes of the samples' block: x [M, in] and grad_out [M, out] with the
/// same M, in a multiple of 4, absmax of in + out, and the block within a global batch of
/// int8's bound.
template <class MemorySpace>
void check_block(const char* phase, const InputView<MemorySpace>& x,
                 const InputView<MemorySpace>& grad_out, const AbsmaxBits<MemorySpace>& amax_bits,
                 std::int64_t stream_samples = 0, std::int64_t sample_offset = 0) {
  const std::int64_t in = x.extent(1), out = grad_out.extent(1);
  require_extent(phase, "grad_out.extent(0) (M)", grad_out.extent(0), "x.extent(0) (M)",
                 x.extent(0));
  if (in % 4 != 0 || in == 0 || out == 0) {
    throw std::invalid_argument(std::string("TernaryCounter::Experimental::") + phase +
                                ": x.extent(1) = " + std::to_string(in) +
                                " must be a positive multiple of 4 and grad_out.extent(1) = " +
                                std::to_string(out) + " positive");
  }
  require_extent(phase, "amax_bits.extent(0)", amax_bits.extent(0), "in + out", in + out);
  if (sample_offset < 0 || sample_offset + std::int64_t(x.extent(0)) > stream_samples) {
    throw std::invalid_argument(std::string("TernaryCounter::Experimental::") + phase +
                                ": the block's samples [" + std::to_string(sample_offset) + ", " +
                                std::to_string(sample_offset + std::int64_t(x.extent(0))) +
                                ") are not within the global batch of " +
                                std::to_string(stream_samples));
  }
  require_int8_bound(phase, "M (global samples)", stream_samples, int8_max_samples);
}

}  // namespace

template <class ExecSpace>
void int8_column_absmax(const ExecSpace& space,
                        const InputView<typename ExecSpace::memory_space>& x,
                        const InputView<typename ExecSpace::memory_space>& grad_out,
                        const AbsmaxBits<typename ExecSpace::memory_space>& amax_bits) {
  check_block("int8_column_absmax", x, grad_out, amax_bits, x.extent(0));
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
  check_block("int8_quantize_operands", x, grad_out, amax_bits, stream_samples, sample_offset);
  const std::int64_t M = x.extent(0), in = x.extent(1), out = grad_out.extent(1);
  // Hosts: xq [M, in] (ColumnQuantizer); GPUs: xq transposed, [in, Mp] (TiledColumnQuantizer).
  constexpr bool tiled_columns = !host_space<ExecSpace>;
  const std::int64_t xq_rows = tiled_columns ? in : M;
  const std::int64_t xq_cols = tiled_columns ? padded_depth(M) : in;
  sized(operands.xq, "int8_operands::xq", xq_rows, xq_cols);
  sized(operands.x_scale, "int8_operands::x_scale", in);
  sized(operands.gq, "int8_operands::gq", out + int8_padding_rows, padded_depth(M));
  sized(operands.gq_scale, "int8_operands::gq_scale", out);
  sized(operands.gq_sums, "int8_operands::gq_sums", out);
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
  require_extent("int8_gradient_rows", "sums.extent(1)", in, "the operands' in",
                 operands.x_scale.extent(0));
  if (first_row < 0 || first_row + rows > std::int64_t(operands.gq_scale.extent(0))) {
    throw std::invalid_argument(
        "TernaryCounter::Experimental::int8_gradient_rows: rows [" + std::to_string(first_row) +
        ", " + std::to_string(first_row + rows) + ") are not within the operands' " +
        std::to_string(operands.gq_scale.extent(0)) + " rows");
  }
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
  // G stays int32 whichever engine forms it: the vendor GEMM writes it, the others' epilogue.
  int8_gradient_product(space, int8_gradient_engine<ExecSpace>(operands.gq.extent(1), false), part,
                        operands.xq, 2, rows, in, IntegerSumsEpilogue<Mem>{sums},
                        reinterpret_cast<float*>(sums.data()), sums.stride(0),
                        "TernaryCounter::Distributed::int8_gradient_sums");
}

template <class ExecSpace>
void int8_gradient_sums(const ExecSpace& space,
                        const InputView<typename ExecSpace::memory_space>& x,
                        const InputView<typename ExecSpace::memory_space>& grad_out,
                        const AbsmaxBits<typename ExecSpace::memory_space>& amax_bits,
                        std::uint32_t seed, std::int64_t row_offset, std::int64_t stream_samples,
                        std::int64_t sample_offset,
                        const IntegerSums<typename ExecSpace::memory_space>& sums) {
  require_extent("int8_gradient_sums", "sums.extent(0)", sums.extent(0), "grad_out.extent(1)",
                 grad_out.extent(1));
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
  validate_state("int8_update_from_sums", rows, params);
  require_extent("int8_update_from_sums", "sums.extent(0)", sums.extent(0), "the rows' out", n);
  require_extent("int8_update_from_sums", "sums.extent(1)", sums.extent(1), "the rows' in", in);
  if (first_row < 0 || in + first_row + n > std::int64_t(amax_bits.extent(0))) {
    throw std::invalid_argument("TernaryCounter::Experimental::int8_update_from_sums: rows [" +
                                std::to_string(first_row) + ", " + std::to_string(first_row + n) +
                                ") have no absmax in amax_bits [in + out] of " +
                                std::to_string(amax_bits.extent(0)));
  }
  require_allocated("int8_update_from_sums", "skipped_rows", skipped_rows);
  const UpdateConstants k = update_constants(params, n, in);
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

}  // namespace TernaryCounter::Experimental
