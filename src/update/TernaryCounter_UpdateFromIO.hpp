// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The strict update from IO: the gradient g = grad_out^T x is formed inside the update and never
// stored as an [out, in] array (SPEC §3, from-IO path).
#pragma once

#include "TernaryCounter_PackedState.hpp"
#include "TernaryCounter_Params.hpp"
#include "TernaryCounter_Precision.hpp"
#include "TernaryCounter_ViewTypes.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace TernaryCounter {

/// The default workspace of update_from_io is bounded by the larger of 4 MiB and 1/8 of the
/// layer's float32 gradient (out * in * 4 bytes), and by the backend's budget (256 MiB on GPUs,
/// 8 MiB on host backends).
inline constexpr std::int64_t from_io_workspace_floor_bytes = std::int64_t(4) << 20;
inline constexpr std::int64_t from_io_workspace_share = 8;  ///< the gradient's share: 1/8

/// Gradient rows update_from_io works on at once (the workspace is rows * in * 4 bytes), at most
/// `out`, at least one tile row. For a budget of `budget_bytes`: about budget / (4 in) rows.
/// budget_bytes = 0, the default: whole tile rows (or all `out` rows) within
/// min(backend budget, max(from_io_workspace_floor_bytes, out * in * 4 / from_io_workspace_share))
/// bytes, or one tile row where that is larger. Results do not depend on the rows.
template <class ExecSpace>
std::int64_t from_io_workspace_rows(std::int64_t out, std::int64_t in,
                                    std::int64_t budget_bytes = 0);

/// One update step of every row of `state` from the layer inputs `x` [M, in] and output
/// gradients `grad_out` [M, out] on `space`, the weight gradient formed in `precision` (fp32:
/// SPEC §3; int8: SPEC §6, at most int8_max_samples samples), with a workspace of
/// from_io_workspace_rows(out, in, params.workspace_bytes) rows allocated for the call.
/// Non-finite rows are skipped and counted. Throws std::invalid_argument (and changes nothing)
/// on bad params or extents. Blocks until the update is done.
template <class ExecSpace>
UpdateReport update_from_io(const ExecSpace& space,
                            const PackedState<typename ExecSpace::memory_space>& state,
                            const InputView<typename ExecSpace::memory_space>& x,
                            const InputView<typename ExecSpace::memory_space>& grad_out,
                            const UpdateParams& params, Precision precision = Precision::fp32);

/// The same with a caller-owned workspace [rows >= 1, in]: rows are processed in chunks of
/// workspace.extent(0) (keep it across calls to avoid an allocation per step). Blocks.
template <class ExecSpace>
UpdateReport update_from_io(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space>& x,
    const InputView<typename ExecSpace::memory_space>& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace,
    Precision precision = Precision::fp32);

/// Asynchronous, with a caller-owned workspace: enqueues every chunk on `space` and returns at
/// once, without a fence; when the work is done, `skipped_rows()` holds the number of rows left
/// untouched. The workspace must not be reused before then. Arguments are checked before
/// anything is enqueued (std::invalid_argument, nothing changed).
template <class ExecSpace>
void update_from_io(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space>& x,
    const InputView<typename ExecSpace::memory_space>& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace,
    const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows,
    Precision precision = Precision::fp32);

/// update_from_io on the default execution space of the state's memory space.
template <class MemorySpace>
UpdateReport update_from_io(const PackedState<MemorySpace>& state,
                            const std::type_identity_t<InputView<MemorySpace>>& x,
                            const std::type_identity_t<InputView<MemorySpace>>& grad_out,
                            const UpdateParams& params, Precision precision = Precision::fp32) {
  return update_from_io(typename MemorySpace::execution_space{}, state, x, grad_out, params,
                        precision);
}

namespace Impl {
/// update_from_io of 16-bit x and grad_out (below): asynchronous, and blocking (a workspace
/// without rows: one of from_io_workspace_rows(out, in, params.workspace_bytes) rows).
template <class ExecSpace, class T>
void update_from_io_half(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space, T>& x,
    const InputView<typename ExecSpace::memory_space, T>& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace,
    const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows, Precision precision);
template <class ExecSpace, class T>
UpdateReport update_from_io_half(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space, T>& x,
    const InputView<typename ExecSpace::memory_space, T>& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace,
    Precision precision);
}  // namespace Impl

/// update_from_io of bfloat16 or float16 x and grad_out (both of one type): the update of the
/// inputs widened to float (exact: SPEC's bits of the widened inputs); int8 quantizes them as it
/// reads them, FP32 widens them into scratch first. The three forms of the float call: blocking
/// with a workspace allocated for the call, blocking with the caller's workspace, asynchronous.
template <class ExecSpace, class X, class GradOut>
requires Impl::HalfInputPair<X, GradOut, typename ExecSpace::memory_space> UpdateReport
update_from_io(const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
               const X& x, const GradOut& grad_out, const UpdateParams& params,
               Precision precision = Precision::fp32) {
  using Mem = typename ExecSpace::memory_space;
  using T = typename X::non_const_value_type;
  return Impl::update_from_io_half<ExecSpace, T>(
      space, state, InputView<Mem, T>(x), InputView<Mem, T>(grad_out), params, {}, precision);
}

template <class ExecSpace, class X, class GradOut>
requires Impl::HalfInputPair<X, GradOut, typename ExecSpace::memory_space> UpdateReport
update_from_io(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state, const X& x,
    const GradOut& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace,
    Precision precision = Precision::fp32) {
  using Mem = typename ExecSpace::memory_space;
  using T = typename X::non_const_value_type;
  return Impl::update_from_io_half<ExecSpace, T>(space, state, InputView<Mem, T>(x),
                                                 InputView<Mem, T>(grad_out), params, workspace,
                                                 precision);
}

template <class ExecSpace, class X, class GradOut>
requires Impl::HalfInputPair<X, GradOut, typename ExecSpace::memory_space>
void update_from_io(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state, const X& x,
    const GradOut& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace,
    const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows,
    Precision precision = Precision::fp32) {
  using Mem = typename ExecSpace::memory_space;
  using T = typename X::non_const_value_type;
  Impl::update_from_io_half<ExecSpace, T>(space, state, InputView<Mem, T>(x),
                                          InputView<Mem, T>(grad_out), params, workspace,
                                          skipped_rows, precision);
}

/// Any other View types for x, grad_out or the workspace (e.g. LayoutLeft): a compile error
/// saying what is expected.
template <class ExecSpace, class X, class GradOut>
requires(Impl::NotInputMatrix<X, typename ExecSpace::memory_space> ||
         Impl::NotInputMatrix<GradOut, typename ExecSpace::memory_space>) UpdateReport
    update_from_io(const ExecSpace&, const PackedState<typename ExecSpace::memory_space>&, const X&,
                   const GradOut&, const UpdateParams&) {
  static_assert(!Impl::NotInputMatrix<X, typename ExecSpace::memory_space>,
                TERNARYCOUNTER_MATRIX_RULE("update_from_io", "x", "const float"));
  static_assert(!Impl::NotInputMatrix<GradOut, typename ExecSpace::memory_space>,
                TERNARYCOUNTER_MATRIX_RULE("update_from_io", "grad_out", "const float"));
  return {};
}
template <class ExecSpace, class X, class GradOut, class Workspace>
requires(Impl::NotInputMatrix<X, typename ExecSpace::memory_space> ||
         Impl::NotInputMatrix<GradOut, typename ExecSpace::memory_space> ||
         Impl::NotOutputMatrix<Workspace, typename ExecSpace::memory_space>) UpdateReport
    update_from_io(const ExecSpace&, const PackedState<typename ExecSpace::memory_space>&, const X&,
                   const GradOut&, const UpdateParams&, const Workspace&,
                   Precision = Precision::fp32) {
  static_assert(!Impl::NotInputMatrix<X, typename ExecSpace::memory_space>,
                TERNARYCOUNTER_MATRIX_RULE("update_from_io", "x", "const float"));
  static_assert(!Impl::NotInputMatrix<GradOut, typename ExecSpace::memory_space>,
                TERNARYCOUNTER_MATRIX_RULE("update_from_io", "grad_out", "const float"));
  static_assert(!Impl::NotOutputMatrix<Workspace, typename ExecSpace::memory_space>,
                TERNARYCOUNTER_MATRIX_RULE("update_from_io", "workspace", "float"));
  return {};
}
template <class MemorySpace, class X, class GradOut>
requires(Impl::NotInputMatrix<X, MemorySpace> ||
         Impl::NotInputMatrix<GradOut, MemorySpace>) UpdateReport
    update_from_io(const PackedState<MemorySpace>&, const X&, const GradOut&, const UpdateParams&) {
  static_assert(!Impl::NotInputMatrix<X, MemorySpace>,
                TERNARYCOUNTER_MATRIX_RULE("update_from_io", "x", "const float"));
  static_assert(!Impl::NotInputMatrix<GradOut, MemorySpace>,
                TERNARYCOUNTER_MATRIX_RULE("update_from_io", "grad_out", "const float"));
  return {};
}

}  // namespace TernaryCounter
