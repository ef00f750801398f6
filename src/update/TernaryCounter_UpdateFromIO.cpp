// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TernaryCounter_UpdateFromIO.hpp"

#include "core/impl/TernaryCounter_ExecutionSpaces.hpp"

#include <Kokkos_Profiling_ScopedRegion.hpp>
#include "core/impl/TernaryCounter_Validation.hpp"
#include "products/impl/TernaryCounter_IntegerPath.hpp"
#include "products/impl/TernaryCounter_TileGemm.hpp"
#include "products/impl/TernaryCounter_TileOperands.hpp"
#include "update/impl/TernaryCounter_RowUpdateKernel.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace TernaryCounter {

namespace {

template <class ExecSpace>
void validate_io(const PackedState<typename ExecSpace::memory_space>& state,
                 const InputView<typename ExecSpace::memory_space>& x,
                 const InputView<typename ExecSpace::memory_space>& grad_out,
                 const UpdateParams& params) {
  Impl::validate_state("update_from_io", state, params);
  Impl::require_extent("update_from_io", "x.extent(1)", x.extent(1), "the state's in", state.in());
  Impl::require_extent("update_from_io", "grad_out.extent(1)", grad_out.extent(1),
                       "the state's out", state.out());
  Impl::require_extent("update_from_io", "grad_out.extent(0) (M)", grad_out.extent(0),
                       "x.extent(0) (M)", x.extent(0));
}

/// The weight gradient of SPEC §3 step 1 as a tile product: rows(r, i) = sum over m ascending of
/// grad_out(m, first + r) * x(m, i).
template <class MemorySpace>
struct GradientProduct {
  Impl::MatrixOperand<MemorySpace, false> a;  ///< grad_out, k = m, j = r
  Impl::MatrixOperand<MemorySpace, false> b;  ///< x, k = m, j = i
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> gradient;

  GradientProduct(const InputView<MemorySpace>& x, const InputView<MemorySpace>& grad_out,
                  const Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>& rows,
                  std::int64_t first)
      : a(grad_out, first, x.extent(0), rows.extent(0)),
        b(x, 0, x.extent(0), x.extent(1)),
        gradient(rows) {}

  KOKKOS_INLINE_FUNCTION std::int64_t rows() const { return gradient.extent(0); }
  KOKKOS_INLINE_FUNCTION std::int64_t cols() const { return gradient.extent(1); }
  KOKKOS_INLINE_FUNCTION std::int64_t depth() const { return a.depth; }
  KOKKOS_INLINE_FUNCTION void store(std::int64_t r, std::int64_t c, float acc) const {
    gradient(r, c) = acc;
  }
};

template <class ExecSpace>
using GradientTiles = Impl::TileGemm<ExecSpace, GradientProduct<typename ExecSpace::memory_space>>;

/// Rows per chunk, at most max_rows: a multiple of the tile rows (or all rows) whose chunks' tiles
/// fill whole waves of team slots; a smaller chunk must buy at least 2% more of the machine.
template <class ExecSpace>
std::int64_t balanced_chunk_rows(const ExecSpace& space, std::int64_t out, std::int64_t in,
                                 std::int64_t max_rows) {
  using Kernel = GradientTiles<ExecSpace>;
  const std::int64_t slots = Impl::tile_team_slots(space);
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

}  // namespace

template <class ExecSpace>
std::int64_t from_io_workspace_rows(std::int64_t out, std::int64_t in, std::int64_t budget_bytes) {
  using T = Tiling<ExecSpace>;
  if (budget_bytes < 0) {
    throw std::invalid_argument("TernaryCounter::from_io_workspace_rows: budget_bytes = " +
                                std::to_string(budget_bytes) + " must be >= 0 (0: the default)");
  }
  const std::int64_t budget = budget_bytes > 0 ? budget_bytes : std::int64_t(T::workspace_bytes);
  const std::int64_t row_bytes = std::max<std::int64_t>(1, in) * std::int64_t(sizeof(float));
  const std::int64_t max_rows = std::max<std::int64_t>(T::tile_rows, budget / row_bytes);
  return std::max<std::int64_t>(1, balanced_chunk_rows(ExecSpace{}, out, in, max_rows));
}

template <class ExecSpace>
void update_from_io(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space>& x,
    const InputView<typename ExecSpace::memory_space>& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace,
    const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::update_from_io");
  validate_io<ExecSpace>(state, x, grad_out, params);
  Impl::require_extent("update_from_io", "workspace.extent(1)", workspace.extent(1),
                       "the state's in", state.in());
  if (workspace.extent(0) == 0 && state.out() > 0) {
    throw std::invalid_argument("TernaryCounter::update_from_io: workspace has 0 rows");
  }
  Impl::require_allocated("update_from_io", "skipped_rows", skipped_rows);
  Impl::RowUpdateKernel<ExecSpace>::resolve_team_size(space, params.team_size, state.in());
  if (params.precision == Precision::int8) {
    Impl::update_from_io_int8(space, state, x, grad_out, params, workspace, skipped_rows);
    return;
  }
  const UpdateConstants k = make_update_constants(params, state.out(), state.in());
  const std::int64_t out = state.out();
  const std::int64_t chunk = balanced_chunk_rows(space, out, state.in(), workspace.extent(0));
  // Every chunk is enqueued on `space`: the row updates add to one count, nothing waits.
  Kokkos::deep_copy(space, skipped_rows, std::int64_t(0));
  for (std::int64_t first = 0; first < out; first += chunk) {
    const std::pair<std::int64_t, std::int64_t> rows(first, std::min(out, first + chunk));
    const auto gradient = Kokkos::subview(
        workspace, std::pair<std::int64_t, std::int64_t>(0, rows.second - rows.first), Kokkos::ALL);
    Impl::run_tile_gemm(
        space, GradientProduct<typename ExecSpace::memory_space>(x, grad_out, gradient, first),
        "TernaryCounter::update_from_io::gradient_tiles");
    UpdateConstants chunk_k = k;
    chunk_k.row_offset = k.row_offset + first;
    const auto part = state.row_range(rows.first, rows.second);
    Impl::RowUpdateKernel<ExecSpace> row_update{part.codes, part.scale, part.v,
                                                gradient,   chunk_k,    skipped_rows};
    row_update.enqueue(space, params.team_size);
  }
}

template <class ExecSpace>
UpdateReport update_from_io(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space>& x,
    const InputView<typename ExecSpace::memory_space>& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace) {
  const SkippedRowsView<typename ExecSpace::memory_space> skipped(
      Kokkos::view_alloc(space, "TernaryCounter::update_from_io::skipped_rows"));
  update_from_io(space, state, x, grad_out, params, workspace, skipped);
  return Impl::wait_for_report(space, skipped);
}

template <class ExecSpace>
UpdateReport update_from_io(const ExecSpace& space,
                            const PackedState<typename ExecSpace::memory_space>& state,
                            const InputView<typename ExecSpace::memory_space>& x,
                            const InputView<typename ExecSpace::memory_space>& grad_out,
                            const UpdateParams& params) {
  validate_io<ExecSpace>(state, x, grad_out, params);
  const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space> workspace(
      Kokkos::view_alloc(space, "TernaryCounter::update_from_io::workspace",
                         Kokkos::WithoutInitializing),
      from_io_workspace_rows<ExecSpace>(state.out(), state.in(), params.workspace_bytes),
      state.in());
  return update_from_io(space, state, x, grad_out, params, workspace);
}

#define TERNARYCOUNTER_INSTANTIATE_UPDATE_FROM_IO(SPACE)                                           \
  template std::int64_t from_io_workspace_rows<SPACE>(std::int64_t, std::int64_t, std::int64_t);   \
  template UpdateReport update_from_io<SPACE>(                                                     \
      const SPACE&, const PackedState<SPACE::memory_space>&,                                       \
      const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&,                \
      const UpdateParams&);                                                                        \
  template UpdateReport update_from_io<SPACE>(                                                     \
      const SPACE&, const PackedState<SPACE::memory_space>&,                                       \
      const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&,                \
      const UpdateParams&,                                                                         \
      const Kokkos::View<float**, Kokkos::LayoutRight, SPACE::memory_space>&);                     \
  template void update_from_io<SPACE>(                                                             \
      const SPACE&, const PackedState<SPACE::memory_space>&,                                       \
      const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&,                \
      const UpdateParams&, const Kokkos::View<float**, Kokkos::LayoutRight, SPACE::memory_space>&, \
      const SkippedRowsView<SPACE::memory_space>&);

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_UPDATE_FROM_IO)

}  // namespace TernaryCounter
