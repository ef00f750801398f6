// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The dispatcher of update and update_from_io (see UpdateDispatch.hpp). The row update runs
// chunk by chunk (update_in_chunks, the one loop); update_from_io's weight gradient of a chunk is
// formed by the tile engine in FP32 (SPEC §3), or in int8 (SPEC §6) from operands quantized once
// per call: on hosts by the AVX2 / VNNI / AMX or portable engine, on GPUs by the vendor GEMM where
// it runs, else by the portable engine. On CUDA a few samples' gradient (FP32 or int8) is formed
// by the row update itself, in one launch over all rows, with no gradient in memory. int8
// quantizes 16-bit x and grad_out as it reads them; FP32 widens them to float first.
#include "update/impl/TernaryCounter_UpdateDispatch.hpp"

#include "core/TernaryCounter_Validation.hpp"
#include "engines/TernaryCounter_ColumnQuantizer.hpp"
#include "engines/TernaryCounter_DecodedBlocks.hpp"
#include "engines/TernaryCounter_ExecutionSpaces.hpp"
#include "engines/TernaryCounter_HostIsa.hpp"
#include "engines/TernaryCounter_Int8Epilogues.hpp"
#include "engines/TernaryCounter_IntegerOperands.hpp"
#include "engines/TernaryCounter_IntegerProduct.hpp"
#include "engines/TernaryCounter_Quantize.hpp"
#include "engines/TernaryCounter_QuantizedRows.hpp"
#include "engines/TernaryCounter_ScratchArena.hpp"
#include "engines/TernaryCounter_TileGemm.hpp"
#include "engines/TernaryCounter_TileGemmLaunch.hpp"
#include "engines/TernaryCounter_TiledColumnQuantizer.hpp"
#include "engines/TernaryCounter_Widening.hpp"
#include "engines/vendor/TernaryCounter_VendorInt8Product.hpp"
#include "update/impl/TernaryCounter_FloatGradientRows.hpp"
#include "update/impl/TernaryCounter_GradientProduct.hpp"
#include "update/impl/TernaryCounter_Int8GradientEngine.hpp"
#include "update/impl/TernaryCounter_IntegerGradientRows.hpp"
#include "update/impl/TernaryCounter_RowUpdateKernel.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace TernaryCounter::Impl {

namespace {

/// SPEC §3's row update of every row of `state`, `chunk` rows at a time: form_gradient(rows,
/// gradient, chunk_k) enqueues the weight gradient of rows [rows.first, rows.second) into the
/// first rows of the workspace and returns true, then the row update of those rows is enqueued;
/// or it enqueues the rows' update itself with the chunk's constants chunk_k (a row update that
/// forms the gradient on the way in) and returns false. Everything is enqueued on `space`: the
/// row updates add to one count, nothing waits.
template <class ExecSpace, class FormGradient>
void update_in_chunks(const ExecSpace& space,
                      const PackedState<typename ExecSpace::memory_space>& state,
                      const UpdateConstants& k, int team_size, std::int64_t chunk,
                      const OutputView<typename ExecSpace::memory_space>& workspace,
                      const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows,
                      const FormGradient& form_gradient) {
  const std::int64_t out = state.out();
  Kokkos::deep_copy(space, skipped_rows, std::int64_t(0));
  for (std::int64_t first = 0; first < out; first += chunk) {
    const std::pair<std::int64_t, std::int64_t> rows(first, std::min(out, first + chunk));
    const OutputView<typename ExecSpace::memory_space> gradient = Kokkos::subview(
        workspace, std::pair<std::int64_t, std::int64_t>(0, rows.second - rows.first), Kokkos::ALL);
    UpdateConstants chunk_k = k;
    chunk_k.row_offset = k.row_offset + first;
    if (!form_gradient(rows, gradient, chunk_k)) continue;
    const auto part = state.row_range(rows.first, rows.second);
    RowUpdateKernel<ExecSpace> row_update{part.codes, part.scale, part.v,
                                          gradient,   chunk_k,    skipped_rows};
    row_update.enqueue(space, team_size);
  }
}

template <class ExecSpace>
void update_from_io_fp32(const ExecSpace& space,
                         const PackedState<typename ExecSpace::memory_space>& state,
                         const InputView<typename ExecSpace::memory_space>& x,
                         const InputView<typename ExecSpace::memory_space>& grad_out,
                         const UpdateParams& params,
                         const OutputView<typename ExecSpace::memory_space>& workspace,
                         const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows) {
  using Mem = typename ExecSpace::memory_space;
  const UpdateConstants k = update_constants(params, state.out(), state.in());
  if constexpr (Capabilities<ExecSpace>::few_sample_fp32_update) {
    if (std::int64_t(x.extent(0)) <= few_sample_update_fp32_max) {  // no gradient in memory
      Kokkos::deep_copy(space, skipped_rows, std::int64_t(0));
      RowUpdateKernel<ExecSpace, false, FewSampleFloatGradientRows<Mem>>{
          state.codes, state.scale, state.v, {}, k, skipped_rows, {x, grad_out, 0}}
          .enqueue(space, params.team_size);
      return;
    }
  }
  const std::int64_t chunk =
      balanced_chunk_rows(space, state.out(), state.in(), workspace.extent(0));
  update_in_chunks(space, state, k, params.team_size, chunk, workspace, skipped_rows,
                   [&](const std::pair<std::int64_t, std::int64_t>& rows,
                       const OutputView<Mem>& gradient, const UpdateConstants&) {
                     run_tile_gemm(space, GradientProduct<Mem>(x, grad_out, gradient, rows.first),
                                   "TernaryCounter::update_from_io::gradient_tiles");
                     return true;
                   });
}

template <class ExecSpace, class T>
void update_from_io_int8(const ExecSpace& space,
                         const PackedState<typename ExecSpace::memory_space>& state,
                         const InputView<typename ExecSpace::memory_space, T>& x,
                         const InputView<typename ExecSpace::memory_space, T>& grad_out,
                         const UpdateParams& params,
                         const OutputView<typename ExecSpace::memory_space>& workspace,
                         const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows) {
  using Mem = typename ExecSpace::memory_space;
  const std::int64_t M = x.extent(0), in = state.in(), out = state.out();
  require_int8_bound("update_from_io", "M (samples)", M, int8_max_samples);
  const UpdateConstants k = update_constants(params, out, in);
  // Hosts: xq [M, in] (ColumnQuantizer); GPUs: xq transposed, [in, Mp] (TiledColumnQuantizer).
  constexpr bool tiled_columns = !host_space<ExecSpace>;
  const std::int64_t xq_rows = tiled_columns ? in : M;
  const std::int64_t xq_cols = tiled_columns ? padded_depth(M) : in;
  const Int8GradientEngine engine = int8_gradient_engine<ExecSpace>(M, true);
  // x's words for FewSampleGradientRows.
  const std::int64_t few_sample_words =
      engine == Int8GradientEngine::few_sample_rows ? (M + 3) / 4 : 0;
  ScratchArena<ExecSpace> arena(
      space, scratch_bytes<std::int8_t>(xq_rows * xq_cols) + scratch_bytes<float>(in) +
                 QuantizedRows<Mem>::bytes(out, M) +
                 (tiled_columns ? scratch_bytes<std::uint32_t>(in + out) : 0) +
                 scratch_bytes<std::uint32_t>(few_sample_words * in));
  const Int8Matrix<Mem> xq(arena.template take<std::int8_t>(xq_rows * xq_cols), xq_rows, xq_cols);
  const FloatVector<Mem> x_scale(arena.template take<float>(in), in);
  const QuantizedRows<Mem> gq(space, arena, out, M);
  const std::uint32_t key = stream_key(params.seed, int8_weight_gradient_tag);
  if constexpr (!tiled_columns) {
    ColumnQuantizer<ExecSpace, T>{x, grad_out, xq, x_scale, gq, key, k.row_offset}.run(
        space, "TernaryCounter::update_from_io::quantize_columns");
  } else {
    const Kokkos::View<std::uint32_t*, Mem> amax_bits(arena.template take<std::uint32_t>(in + out),
                                                      in + out);
    TiledColumnQuantizer<ExecSpace, T>{x,        grad_out, xq,        x_scale, gq.q,
                                       gq.scale, gq.sums,  amax_bits, key,     k.row_offset}
        .run(space);
  }
  if constexpr (Capabilities<ExecSpace>::few_sample_int8_gpu) {
    if (engine == Int8GradientEngine::few_sample_rows) {  // no G in memory: the update forms it
      Kokkos::deep_copy(space, skipped_rows, std::int64_t(0));
      const Kokkos::View<std::uint32_t**, Kokkos::LayoutRight, Mem> x_words(
          arena.template take<std::uint32_t>(few_sample_words * in), few_sample_words, in);
      pack_sample_words(space, xq, x_words);
      const FewSampleGradientRows<Mem> source{gq.q, x_words, gq.scale, x_scale,
                                              int(few_sample_words)};
      RowUpdateKernel<ExecSpace, false, FewSampleGradientRows<Mem>>{
          state.codes, state.scale, state.v, {}, k, skipped_rows, source}
          .enqueue(space, params.team_size);
      return;
    }
  }
  const std::int64_t chunk = std::max<std::int64_t>(1, workspace.extent(0));
  update_in_chunks(
      space, state, k, params.team_size, chunk, workspace, skipped_rows,
      [&](const std::pair<std::int64_t, std::int64_t>& rows, const OutputView<Mem>& gradient,
          const UpdateConstants& chunk_k) {
        const std::int64_t n = rows.second - rows.first;
        QuantizedRows<Mem> part = gq;
        part.q = Kokkos::subview(gq.q, rows, Kokkos::ALL);
        part.scale = Kokkos::subview(gq.scale, rows);
        part.sums = Kokkos::subview(gq.sums, rows);
        const GradientEpilogue<Mem> epilogue{gradient, part.scale, x_scale};
        if (!int8_gradient_product(space, engine, part, xq, state.C, n, in, epilogue,
                                   gradient.data(), gradient.stride(0),
                                   "TernaryCounter::update_from_io::int8_gradient")) {
          return true;  // the epilogue wrote the float rows
        }
        if (RowUpdateKernel<ExecSpace>::vector_rows(gradient)) {  // the scales on the way in
          const IntegerSumRows<Mem> source{reinterpret_cast<const std::int32_t*>(gradient.data()),
                                           std::int64_t(gradient.stride(0)), part.scale, x_scale};
          const auto rows_state = state.row_range(rows.first, rows.second);
          RowUpdateKernel<ExecSpace, false, IntegerSumRows<Mem>>{
              rows_state.codes, rows_state.scale, rows_state.v, {}, chunk_k, skipped_rows, source}
              .enqueue(space, params.team_size);
          return false;
        }
        finish_in_place(space, gradient, n, in, epilogue,
                        "TernaryCounter::update_from_io::int8_epilogue");
        return true;
      });
}

}  // namespace

template <class ExecSpace>
using GradientTiles = Impl::TileGemm<ExecSpace, GradientProduct<typename ExecSpace::memory_space>>;

/// Rows per chunk, at most max_rows: a multiple of the tile rows (or all rows) whose chunks' tiles
/// fill whole waves of team slots; a smaller chunk must buy at least 2% more of the machine.
template <class ExecSpace>
std::int64_t balanced_chunk_rows(const ExecSpace& space, std::int64_t out, std::int64_t in,
                                 std::int64_t max_rows) {
  using Kernel = GradientTiles<ExecSpace>;
  const std::int64_t slots = tile_team_slots(space);
  const auto efficiency = [&](std::int64_t r) {
    const std::int64_t full = out / r, rest = out % r;
    const std::int64_t tiles = full * Kernel::tile_count(r, in) + Kernel::tile_count(rest, in);
    const auto waves = [&](std::int64_t t) { return (t + slots - 1) / slots; };
    const std::int64_t launched = full * waves(Kernel::tile_count(r, in)) +
                                  (rest > 0 ? waves(Kernel::tile_count(rest, in)) : 0);
    return launched == 0 ? 1.0 : double(tiles) / double(launched * slots);
  };
  const std::int64_t first = std::min(out, max_rows);
  std::int64_t best = std::max<std::int64_t>(1, first);
  double best_efficiency = efficiency(best);
  for (std::int64_t r = first / Kernel::TR * Kernel::TR; r >= Kernel::TR; r -= Kernel::TR) {
    const double e = efficiency(r);
    if (e > best_efficiency + 0.02) {
      best = r;
      best_efficiency = e;
    }
  }
  return best;
}

template <class ExecSpace>
void dispatch_update(const ExecSpace& space,
                     const PackedState<typename ExecSpace::memory_space>& state,
                     const InputView<typename ExecSpace::memory_space>& grad_w,
                     const UpdateParams& params,
                     const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows) {
  const UpdateConstants k = update_constants(params, state.out(), state.in());
  Kokkos::deep_copy(space, skipped_rows, std::int64_t(0));
  RowUpdateKernel<ExecSpace> kernel{state.codes, state.scale, state.v, grad_w, k, skipped_rows};
  kernel.enqueue(space, params.team_size);
}

template <class ExecSpace, class T>
void dispatch_update_from_io(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space, T>& x,
    const InputView<typename ExecSpace::memory_space, T>& grad_out, const UpdateParams& params,
    Precision precision, const OutputView<typename ExecSpace::memory_space>& workspace,
    const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows) {
  if (precision == Precision::int8) {
    update_from_io_int8(space, state, x, grad_out, params, workspace, skipped_rows);
  } else if constexpr (std::is_same_v<T, float>) {
    update_from_io_fp32(space, state, x, grad_out, params, workspace, skipped_rows);
  } else {
    ScratchArena<ExecSpace, WideningScratch> arena(
        space, widened_bytes(x.extent(0), x.extent(1)) +
                   widened_bytes(grad_out.extent(0), grad_out.extent(1)));
    update_from_io_fp32(
        space, state, widened(space, arena, x, "TernaryCounter::update_from_io::widen_x"),
        widened(space, arena, grad_out, "TernaryCounter::update_from_io::widen_grad_out"), params,
        workspace, skipped_rows);
  }
}

template <class ExecSpace>
void dispatch_gradient_from_io(const ExecSpace& space,
                               const InputView<typename ExecSpace::memory_space>& x,
                               const InputView<typename ExecSpace::memory_space>& grad_out,
                               const OutputView<typename ExecSpace::memory_space>& grad_w,
                               bool accumulate) {
  using Mem = typename ExecSpace::memory_space;
  if (accumulate) {
    run_tile_gemm(space, ContinuedGradientProduct<Mem>(x, grad_out, grad_w, 0),
                  "TernaryCounter::gradient_from_io::continued_tiles");
  } else {
    run_tile_gemm(space, GradientProduct<Mem>(x, grad_out, grad_w, 0),
                  "TernaryCounter::gradient_from_io::tiles");
  }
}

#define TERNARYCOUNTER_INSTANTIATE_UPDATE_FROM_IO_DISPATCH(SPACE, T)                      \
  template void dispatch_update_from_io<SPACE, T>(                                        \
      const SPACE&, const PackedState<SPACE::memory_space>&,                              \
      const InputView<SPACE::memory_space, T>&, const InputView<SPACE::memory_space, T>&, \
      const UpdateParams&, Precision, const OutputView<SPACE::memory_space>&,             \
      const SkippedRowsView<SPACE::memory_space>&);
#define TERNARYCOUNTER_INSTANTIATE_UPDATE_DISPATCH(SPACE)                                          \
  template void dispatch_gradient_from_io<SPACE>(                                                  \
      const SPACE&, const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&,  \
      const OutputView<SPACE::memory_space>&, bool);                                               \
  template void dispatch_update<SPACE>(const SPACE&, const PackedState<SPACE::memory_space>&,      \
                                       const InputView<SPACE::memory_space>&, const UpdateParams&, \
                                       const SkippedRowsView<SPACE::memory_space>&);               \
  TERNARYCOUNTER_INSTANTIATE_UPDATE_FROM_IO_DISPATCH(SPACE, float)                                 \
  TERNARYCOUNTER_INSTANTIATE_UPDATE_FROM_IO_DISPATCH(SPACE, bfloat16)                              \
  TERNARYCOUNTER_INSTANTIATE_UPDATE_FROM_IO_DISPATCH(SPACE, float16)                               \
  template std::int64_t balanced_chunk_rows<SPACE>(const SPACE&, std::int64_t, std::int64_t,       \
                                                   std::int64_t);

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_UPDATE_DISPATCH)

}  // namespace TernaryCounter::Impl
