#include "TernaryCounter_UpdateFromIO.hpp"

#include "impl/TernaryCounter_ExecutionSpaces.hpp"

#include <Kokkos_Profiling_ScopedRegion.hpp>
#include "impl/TernaryCounter_GradientTileKernel.hpp"
#include "impl/TernaryCounter_RowUpdateKernel.hpp"
#include "impl/TernaryCounter_Validation.hpp"

#include <algorithm>

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

}  // namespace

template <class ExecSpace>
std::int64_t from_io_workspace_rows(std::int64_t out, std::int64_t in) {
  using T = Tiling<ExecSpace>;
  const std::int64_t row_bytes = std::max<std::int64_t>(1, in) * std::int64_t(sizeof(float));
  std::int64_t rows = std::int64_t(T::workspace_bytes) / row_bytes;
  rows = std::max<std::int64_t>(T::tile_rows, rows / T::tile_rows * T::tile_rows);
  return std::max<std::int64_t>(1, std::min(rows, out));
}

template <class ExecSpace>
UpdateReport update_from_io(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space>& x,
    const InputView<typename ExecSpace::memory_space>& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::update_from_io");
  validate_io<ExecSpace>(state, x, grad_out, params);
  Impl::require_extent("update_from_io", "workspace.extent(1)", workspace.extent(1),
                       "the state's in", state.in());
  if (workspace.extent(0) == 0 && state.out() > 0) {
    throw std::invalid_argument("TernaryCounter::update_from_io: workspace has 0 rows");
  }
  Impl::RowUpdateKernel<ExecSpace>::resolve_team_size(space, params.team_size, state.in());
  const UpdateConstants k = make_update_constants(params, state.in());
  const std::int64_t out = state.out();
  const std::int64_t chunk = workspace.extent(0);
  UpdateReport report;
  for (std::int64_t first = 0; first < out; first += chunk) {
    const std::pair<std::int64_t, std::int64_t> rows(first, std::min(out, first + chunk));
    const auto gradient = Kokkos::subview(
        workspace, std::pair<std::int64_t, std::int64_t>(0, rows.second - rows.first), Kokkos::ALL);
    Impl::GradientTileKernel<ExecSpace>{x, grad_out, gradient, first}.run(space);
    UpdateConstants chunk_k = k;
    chunk_k.row_offset = k.row_offset + first;
    Impl::RowUpdateKernel<ExecSpace> row_update{Kokkos::subview(state.codes, rows, Kokkos::ALL),
                                                Kokkos::subview(state.scale, rows),
                                                Kokkos::subview(state.v, rows), gradient, chunk_k};
    report.skipped_rows += row_update.run(space, params.team_size);
  }
  return report;
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
      from_io_workspace_rows<ExecSpace>(state.out(), state.in()), state.in());
  return update_from_io(space, state, x, grad_out, params, workspace);
}

#define TERNARYCOUNTER_INSTANTIATE_UPDATE_FROM_IO(SPACE)                            \
  template std::int64_t from_io_workspace_rows<SPACE>(std::int64_t, std::int64_t);  \
  template UpdateReport update_from_io<SPACE>(                                      \
      const SPACE&, const PackedState<SPACE::memory_space>&,                        \
      const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&, \
      const UpdateParams&);                                                         \
  template UpdateReport update_from_io<SPACE>(                                      \
      const SPACE&, const PackedState<SPACE::memory_space>&,                        \
      const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&, \
      const UpdateParams&,                                                          \
      const Kokkos::View<float**, Kokkos::LayoutRight, SPACE::memory_space>&);

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_UPDATE_FROM_IO)

}  // namespace TernaryCounter
