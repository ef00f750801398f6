// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TernaryCounter_DistributedUpdate.hpp"

#include "TernaryCounter_Blocks.hpp"
#include "core/TernaryCounter_Reallocate.hpp"
#include "distributed/impl/TernaryCounter_Agreement.hpp"
#include "distributed/impl/TernaryCounter_AllGather.hpp"
#include "distributed/impl/TernaryCounter_IntegerUpdate.hpp"
#include "distributed/impl/TernaryCounter_MpiCheck.hpp"

#include <Kokkos_Profiling_ScopedRegion.hpp>
#include "core/TernaryCounter_Validation.hpp"
#include "engines/TernaryCounter_ExecutionSpaces.hpp"

#include <string>

namespace TernaryCounter::Distributed {

namespace {

constexpr const char* where = "TernaryCounter::Distributed::update_from_io";

/// This rank's own checks (the ones one process's update_from_io makes, with the local sizes);
/// "" when they pass.
template <class MemorySpace>
std::string local_error(const PackedState<MemorySpace>& state, const InputView<MemorySpace>& x,
                        const InputView<MemorySpace>& grad_out, const UpdateParams& params,
                        Precision precision) {
  try {
    TernaryCounter::Impl::validate_state("Distributed::update_from_io", state, params);
    TernaryCounter::Impl::require_precision("Distributed::update_from_io", precision);
    TernaryCounter::Impl::require_extent("Distributed::update_from_io", "x_local.extent(1)",
                                         x.extent(1), "the state's in", state.in());
    TernaryCounter::Impl::require_extent("Distributed::update_from_io", "grad_out_local.extent(1)",
                                         grad_out.extent(1), "the state's out", state.out());
    TernaryCounter::Impl::require_extent("Distributed::update_from_io", "grad_out_local.extent(0)",
                                         grad_out.extent(0), "x_local.extent(0)", x.extent(0));
    // The row all-gather moves whole rows of the state's own memory.
    if (!state.codes.span_is_contiguous() || !state.scale.span_is_contiguous() ||
        !state.v.span_is_contiguous() || !x.span_is_contiguous() ||
        !grad_out.span_is_contiguous()) {
      return std::string(where) +
             ": the state's codes, scale and v, x_local and grad_out_local must be contiguous";
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

template <class ExecSpace>
UpdateReport Impl::update_from_io_agreeing(
    const Communicator& comm, const ExecSpace& space,
    const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space>& x_local,
    const InputView<typename ExecSpace::memory_space>& grad_out_local, const UpdateParams& params,
    Precision precision, UpdateWorkspace<typename ExecSpace::memory_space>& workspace,
    const std::vector<Field>& extra) {
  Kokkos::Profiling::ScopedRegion region(where);
  // Everything every rank must share, checked before anything moves: no rank updates unless
  // all of them will.
  std::vector<Field> fields = {Field::integer("the state's out", state.out()),
                               Field::integer("the state's in", state.in()),
                               Field::integer("the state's C", state.C),
                               Field::integer("params.C", params.C),
                               Field::real("params.lr", params.lr),
                               Field::real("params.lr_scale", params.lr_scale),
                               Field::real("params.rms_beta", params.rms_beta),
                               Field::real("params.rms_eps", params.rms_eps),
                               Field::real("params.clip", params.clip),
                               Field::integer("params.seed", params.seed),
                               Field::integer("params.lagged", params.lagged),
                               Field::integer("params.row_offset", params.row_offset),
                               Field::integer("precision", int(precision))};
  fields.insert(fields.end(), extra.begin(), extra.end());
  const std::vector<std::int64_t> samples =
      agree(comm, where, local_error(state, x_local, grad_out_local, params, precision), fields,
            std::int64_t(x_local.extent(0)));

  if (precision == Precision::int8) {
    UpdateReport report;
    const std::int64_t skipped = Impl::integer_update(comm, space, state, x_local, grad_out_local,
                                                      params, samples, workspace);
    Impl::mpi_check(
        MPI_Allreduce(&skipped, &report.skipped_rows, 1, MPI_INT64_T, MPI_SUM, comm.mpi()),
        "MPI_Allreduce");
    return report;
  }

  const int n = comm.size(), rank = comm.rank();
  std::vector<std::int64_t> sample_first(std::size_t(n) + 1, 0), row_first(std::size_t(n) + 1);
  for (int r = 0; r < n; ++r) {
    sample_first[r + 1] = sample_first[r] + samples[r];
    row_first[r] = block(state.out(), r, n).first;
  }
  row_first[n] = state.out();
  const std::int64_t m = sample_first[n], in = state.in(), out = state.out();
  const Block mine{row_first[rank], row_first[rank + 1]};

  // 1. The global x and grad_out, in rank order.
  const auto x = TernaryCounter::Impl::sized(workspace.x, "Distributed::x", m, in);
  const auto grad_out =
      TernaryCounter::Impl::sized(workspace.grad_out, "Distributed::grad_out", m, out);
  Impl::all_gather_rows(
      comm, space,
      {{x_local.data(), x.data(), in * std::int64_t(sizeof(float)), sample_first},
       {grad_out_local.data(), grad_out.data(), out * std::int64_t(sizeof(float)), sample_first}});

  // 2. This rank's rows over all m samples: one process's arithmetic (row_offset keeps the
  // rounding hash on the global row index).
  std::int64_t skipped = 0;
  if (mine.size() > 0) {
    const auto columns = TernaryCounter::Impl::sized(workspace.grad_out_rows,
                                                     "Distributed::grad_out_rows", m, mine.size());
    const std::int64_t first = mine.first;
    Kokkos::parallel_for(
        "TernaryCounter::Distributed::own_columns",
        Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>(space, {0, 0}, {m, mine.size()}),
        KOKKOS_LAMBDA(std::int64_t s, std::int64_t j) { columns(s, j) = grad_out(s, first + j); });
    const auto update =
        TernaryCounter::Impl::sized(workspace.update, "Distributed::update",
                                    from_io_workspace_rows<ExecSpace>(mine.size(), in), in);
    UpdateParams p = params;
    p.row_offset = params.row_offset + mine.first;
    skipped = TernaryCounter::update_from_io(space, state.row_range(mine.first, mine.last), x,
                                             columns, p, update, precision)
                  .skipped_rows;
  }

  // 3. Every rank's updated rows to every rank.
  Impl::all_gather_rows(
      comm, space,
      {{nullptr, state.codes.data(), std::int64_t(state.codes.extent(1)), row_first},
       {nullptr, state.scale.data(), std::int64_t(sizeof(float)), row_first},
       {nullptr, state.v.data(), std::int64_t(sizeof(float)), row_first}});
  UpdateReport report;
  Impl::mpi_check(
      MPI_Allreduce(&skipped, &report.skipped_rows, 1, MPI_INT64_T, MPI_SUM, comm.mpi()),
      "MPI_Allreduce");
  return report;
}

template <class ExecSpace>
UpdateReport update_from_io(const Communicator& comm, const ExecSpace& space,
                            const PackedState<typename ExecSpace::memory_space>& state,
                            const InputView<typename ExecSpace::memory_space>& x_local,
                            const InputView<typename ExecSpace::memory_space>& grad_out_local,
                            const UpdateParams& params,
                            UpdateWorkspace<typename ExecSpace::memory_space>& workspace,
                            Precision precision) {
  return Impl::update_from_io_agreeing(comm, space, state, x_local, grad_out_local, params,
                                       precision, workspace, {});
}

#define TERNARYCOUNTER_INSTANTIATE_DISTRIBUTED_UPDATE(SPACE)                        \
  template UpdateReport update_from_io<SPACE>(                                      \
      const Communicator&, const SPACE&, const PackedState<SPACE::memory_space>&,   \
      const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&, \
      const UpdateParams&, UpdateWorkspace<SPACE::memory_space>&, Precision);       \
  template UpdateReport Impl::update_from_io_agreeing<SPACE>(                       \
      const Communicator&, const SPACE&, const PackedState<SPACE::memory_space>&,   \
      const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&, \
      const UpdateParams&, Precision, UpdateWorkspace<SPACE::memory_space>&,        \
      const std::vector<Field>&);

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_DISTRIBUTED_UPDATE)

}  // namespace TernaryCounter::Distributed
