// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TernaryCounter_UpdateFromIO.hpp"

#include "core/TernaryCounter_Validation.hpp"
#include "engines/TernaryCounter_ExecutionSpaces.hpp"
#include "engines/TernaryCounter_Tiling.hpp"
#include "update/impl/TernaryCounter_RowUpdateKernel.hpp"
#include "update/impl/TernaryCounter_UpdateDispatch.hpp"

#include <Kokkos_Profiling_ScopedRegion.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace TernaryCounter {

namespace {

template <class ExecSpace, class T = float>
void validate_io(const PackedState<typename ExecSpace::memory_space>& state,
                 const InputView<typename ExecSpace::memory_space, T>& x,
                 const InputView<typename ExecSpace::memory_space, T>& grad_out,
                 const UpdateParams& params, Precision precision) {
  Impl::validate_state("update_from_io", state, params);
  Impl::require_precision("update_from_io", precision);
  Impl::require_extent("update_from_io", "x.extent(1)", x.extent(1), "the state's in", state.in());
  Impl::require_extent("update_from_io", "grad_out.extent(1)", grad_out.extent(1),
                       "the state's out", state.out());
  Impl::require_extent("update_from_io", "grad_out.extent(0) (M)", grad_out.extent(0),
                       "x.extent(0) (M)", x.extent(0));
}

template <class ExecSpace>
void validate_workspace(
    const PackedState<typename ExecSpace::memory_space>& state,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace) {
  Impl::require_extent("update_from_io", "workspace.extent(1)", workspace.extent(1),
                       "the state's in", state.in());
  if (workspace.extent(0) == 0 && state.out() > 0) {
    throw std::invalid_argument("TernaryCounter::update_from_io: workspace has 0 rows");
  }
}

/// The update of validated arguments, enqueued on `space`.
template <class ExecSpace, class T>
void enqueue_update_from_io(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space, T>& x,
    const InputView<typename ExecSpace::memory_space, T>& grad_out, const UpdateParams& params,
    Precision precision,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace,
    const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows) {
  Impl::RowUpdateKernel<ExecSpace>::resolve_team_size(space, params.team_size, state.in());
  Impl::dispatch_update_from_io(space, state, x, grad_out, params, precision, workspace,
                                skipped_rows);
}

/// Bytes of the [out, in] float32 gradient, saturated at the int64 bound.
std::int64_t gradient_bytes(std::int64_t out, std::int64_t in) {
  const std::int64_t cells = std::max<std::int64_t>(1, out) * std::int64_t(sizeof(float));
  const std::int64_t cols = std::max<std::int64_t>(1, in);
  return cols > std::numeric_limits<std::int64_t>::max() / cells
             ? std::numeric_limits<std::int64_t>::max()
             : cells * cols;
}

/// The blocking calls' count of skipped rows.
template <class ExecSpace>
SkippedRowsView<typename ExecSpace::memory_space> skipped_rows_view(const ExecSpace& space) {
  return SkippedRowsView<typename ExecSpace::memory_space>(
      Kokkos::view_alloc(space, "TernaryCounter::update_from_io::skipped_rows"));
}

}  // namespace

template <class ExecSpace>
std::int64_t from_io_workspace_rows(std::int64_t out, std::int64_t in, std::int64_t budget_bytes) {
  using T = Tiling<ExecSpace>;
  if (budget_bytes < 0) {
    throw std::invalid_argument("TernaryCounter::from_io_workspace_rows: budget_bytes = " +
                                std::to_string(budget_bytes) + " must be >= 0 (0: the default)");
  }
  const std::int64_t row_bytes = std::max<std::int64_t>(1, in) * std::int64_t(sizeof(float));
  std::int64_t max_rows = 0;
  if (budget_bytes > 0) {
    max_rows = std::max<std::int64_t>(T::tile_rows, budget_bytes / row_bytes);
  } else {
    // A small share of the layer's own float32 gradient, so that the workspace stays small
    // beside the state (0.75 byte per weight) on every backend: all rows or whole tile rows
    // within the budget, or one tile row.
    const std::int64_t budget = std::min(
        std::int64_t(T::workspace_bytes),
        std::max(from_io_workspace_floor_bytes, gradient_bytes(out, in) / from_io_workspace_share));
    const std::int64_t rows = budget / row_bytes;
    max_rows = rows >= out ? out : std::max<std::int64_t>(1, rows / T::tile_rows) * T::tile_rows;
  }
  return std::max<std::int64_t>(1, Impl::balanced_chunk_rows(ExecSpace{}, out, in, max_rows));
}

namespace {

/// The asynchronous call of any element type: every check, then the update enqueued.
template <class ExecSpace, class T>
void checked_update_from_io(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space, T>& x,
    const InputView<typename ExecSpace::memory_space, T>& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace,
    const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows, Precision precision) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::update_from_io");
  validate_io<ExecSpace, T>(state, x, grad_out, params, precision);
  validate_workspace<ExecSpace>(state, workspace);
  Impl::require_allocated("update_from_io", "skipped_rows", skipped_rows);
  enqueue_update_from_io(space, state, x, grad_out, params, precision, workspace, skipped_rows);
}

/// The blocking call of any element type, with the caller's workspace or (`allocate`) one of
/// from_io_workspace_rows rows for the call; returns the skipped rows once the update is done.
template <class ExecSpace, class T>
UpdateReport blocking_update_from_io(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space, T>& x,
    const InputView<typename ExecSpace::memory_space, T>& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace,
    bool allocate, Precision precision) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::update_from_io");
  validate_io<ExecSpace, T>(state, x, grad_out, params, precision);
  auto rows = workspace;
  if (allocate) {
    rows = decltype(rows)(
        Kokkos::view_alloc(space, "TernaryCounter::update_from_io::workspace",
                           Kokkos::WithoutInitializing),
        from_io_workspace_rows<ExecSpace>(state.out(), state.in(), params.workspace_bytes),
        state.in());
  } else {
    validate_workspace<ExecSpace>(state, rows);
  }
  const auto skipped = skipped_rows_view(space);
  enqueue_update_from_io(space, state, x, grad_out, params, precision, rows, skipped);
  return Impl::wait_for_report(space, skipped);
}

}  // namespace

template <class ExecSpace>
void update_from_io(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space>& x,
    const InputView<typename ExecSpace::memory_space>& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace,
    const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows, Precision precision) {
  checked_update_from_io(space, state, x, grad_out, params, workspace, skipped_rows, precision);
}

template <class ExecSpace>
UpdateReport update_from_io(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space>& x,
    const InputView<typename ExecSpace::memory_space>& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace,
    Precision precision) {
  return blocking_update_from_io(space, state, x, grad_out, params, workspace, false, precision);
}

template <class ExecSpace>
UpdateReport update_from_io(const ExecSpace& space,
                            const PackedState<typename ExecSpace::memory_space>& state,
                            const InputView<typename ExecSpace::memory_space>& x,
                            const InputView<typename ExecSpace::memory_space>& grad_out,
                            const UpdateParams& params, Precision precision) {
  return blocking_update_from_io(space, state, x, grad_out, params, {}, true, precision);
}

template <class ExecSpace, class T>
void Impl::update_from_io_half(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space, T>& x,
    const InputView<typename ExecSpace::memory_space, T>& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace,
    const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows, Precision precision) {
  checked_update_from_io(space, state, x, grad_out, params, workspace, skipped_rows, precision);
}

template <class ExecSpace, class T>
UpdateReport Impl::update_from_io_half(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space, T>& x,
    const InputView<typename ExecSpace::memory_space, T>& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace,
    Precision precision) {
  // (The 16-bit overloads without a workspace pass one of no rows.)
  return blocking_update_from_io(space, state, x, grad_out, params, workspace,
                                 workspace.extent(0) == 0, precision);
}

#define TERNARYCOUNTER_INSTANTIATE_UPDATE_FROM_IO(SPACE)                                           \
  template std::int64_t from_io_workspace_rows<SPACE>(std::int64_t, std::int64_t, std::int64_t);   \
  template UpdateReport update_from_io<SPACE>(                                                     \
      const SPACE&, const PackedState<SPACE::memory_space>&,                                       \
      const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&,                \
      const UpdateParams&, Precision);                                                             \
  template UpdateReport update_from_io<SPACE>(                                                     \
      const SPACE&, const PackedState<SPACE::memory_space>&,                                       \
      const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&,                \
      const UpdateParams&, const Kokkos::View<float**, Kokkos::LayoutRight, SPACE::memory_space>&, \
      Precision);                                                                                  \
  template void update_from_io<SPACE>(                                                             \
      const SPACE&, const PackedState<SPACE::memory_space>&,                                       \
      const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&,                \
      const UpdateParams&, const Kokkos::View<float**, Kokkos::LayoutRight, SPACE::memory_space>&, \
      const SkippedRowsView<SPACE::memory_space>&, Precision);

#define TERNARYCOUNTER_INSTANTIATE_UPDATE_FROM_IO_WIDENED(SPACE, T)                                \
  template void Impl::update_from_io_half<SPACE, T>(                                               \
      const SPACE&, const PackedState<SPACE::memory_space>&,                                       \
      const InputView<SPACE::memory_space, T>&, const InputView<SPACE::memory_space, T>&,          \
      const UpdateParams&, const Kokkos::View<float**, Kokkos::LayoutRight, SPACE::memory_space>&, \
      const SkippedRowsView<SPACE::memory_space>&, Precision);                                     \
  template UpdateReport Impl::update_from_io_half<SPACE, T>(                                       \
      const SPACE&, const PackedState<SPACE::memory_space>&,                                       \
      const InputView<SPACE::memory_space, T>&, const InputView<SPACE::memory_space, T>&,          \
      const UpdateParams&, const Kokkos::View<float**, Kokkos::LayoutRight, SPACE::memory_space>&, \
      Precision);
#define TERNARYCOUNTER_INSTANTIATE_UPDATE_FROM_IO_HALF(SPACE)        \
  TERNARYCOUNTER_INSTANTIATE_UPDATE_FROM_IO_WIDENED(SPACE, bfloat16) \
  TERNARYCOUNTER_INSTANTIATE_UPDATE_FROM_IO_WIDENED(SPACE, float16)

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_UPDATE_FROM_IO)
TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_UPDATE_FROM_IO_HALF)

}  // namespace TernaryCounter
