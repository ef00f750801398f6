// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The integer path of the public calls (SPEC §6): forward, backward_input and update_from_io with
// int8 operands. The public calls check their arguments, then come here when asked for int8.
#pragma once

#include "TernaryCounter_Linear.hpp"
#include "TernaryCounter_UpdateFromIO.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

/// The largest M of an int8 update_from_io: |G| <= 127 * 127 * M must fit in int32.
inline constexpr std::int64_t int8_max_samples = 133144;
/// The largest depth of an int8 forward (in) or backward_input (out): 127 * depth in int32.
inline constexpr std::int64_t int8_max_depth = 16909320;

template <class ExecSpace>
void forward_int8(const ExecSpace& space,
                  const PackedState<typename ExecSpace::memory_space>& state,
                  const InputView<typename ExecSpace::memory_space>& x,
                  const OutputView<typename ExecSpace::memory_space>& y);

template <class ExecSpace>
void backward_input_int8(const ExecSpace& space,
                         const PackedState<typename ExecSpace::memory_space>& state,
                         const InputView<typename ExecSpace::memory_space>& grad_out,
                         const OutputView<typename ExecSpace::memory_space>& grad_x,
                         std::uint32_t seed, std::int64_t sample_offset);

/// Enqueues the int8 update on `space` (arguments already checked).
template <class ExecSpace>
void update_from_io_int8(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space>& x,
    const InputView<typename ExecSpace::memory_space>& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace,
    const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows);

/// Throws std::invalid_argument when `value` exceeds the integer path's bound.
void require_int8_bound(const char* call, const char* what, std::int64_t value, std::int64_t bound);

}  // namespace TernaryCounter::Impl
