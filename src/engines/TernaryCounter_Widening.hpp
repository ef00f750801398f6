// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// 16-bit inputs and outputs of the calls (HalfFloats.hpp) around the float engines: the input
// widened to float (exact) into the widening arena, the float result rounded into a 16-bit
// output. The engines then compute SPEC's results of the widened input, bit for bit. An engine
// that reads 16-bit data as it loads replaces these passes where it serves.
#pragma once

#include "TernaryCounter_HalfFloats.hpp"
#include "TernaryCounter_ViewTypes.hpp"
#include "engines/TernaryCounter_ScratchArena.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

/// Scratch bytes of a widened [rows, cols] input.
inline std::size_t widened_bytes(std::int64_t rows, std::int64_t cols) {
  return scratch_bytes<float>(rows * cols);
}

/// Enqueues `in` widened to float into the arena; returns the float matrix.
template <class ExecSpace, class T>
InputView<typename ExecSpace::memory_space> widened(
    const ExecSpace& space, ScratchArena<ExecSpace, WideningScratch>& arena,
    const InputView<typename ExecSpace::memory_space, T>& in, const char* label) {
  const std::int64_t rows = in.extent(0), cols = in.extent(1);
  const OutputView<typename ExecSpace::memory_space> out(arena.template take<float>(rows * cols),
                                                         rows, cols);
  Kokkos::parallel_for(
      label, Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>(space, {0, 0}, {rows, cols}),
      KOKKOS_LAMBDA(std::int64_t r, std::int64_t c) { out(r, c) = widen(in(r, c)); });
  return out;
}

/// A float [rows, cols] output in the arena, for a result that is rounded into `out` later.
template <class ExecSpace, class U>
OutputView<typename ExecSpace::memory_space> float_result(
    ScratchArena<ExecSpace, WideningScratch>& arena,
    const OutputView<typename ExecSpace::memory_space, U>& out) {
  const std::int64_t rows = out.extent(0), cols = out.extent(1);
  return OutputView<typename ExecSpace::memory_space>(arena.template take<float>(rows * cols), rows,
                                                      cols);
}

/// Enqueues out = `result` rounded to U (to nearest, ties to even).
template <class ExecSpace, class U>
void narrow_into(const ExecSpace& space, const OutputView<typename ExecSpace::memory_space>& result,
                 const OutputView<typename ExecSpace::memory_space, U>& out, const char* label) {
  Kokkos::parallel_for(
      label,
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>(
          space, {0, 0}, {std::int64_t(out.extent(0)), std::int64_t(out.extent(1))}),
      KOKKOS_LAMBDA(std::int64_t r, std::int64_t c) { out(r, c) = narrow<U>(result(r, c)); });
}

}  // namespace TernaryCounter::Impl
