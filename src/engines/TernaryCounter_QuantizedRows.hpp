// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// An int8 operand quantized by rows (SPEC §6) in a call's scratch: the values, the rows' scales
// and integer sums.
#pragma once

#include "engines/TernaryCounter_IntegerOperands.hpp"
#include "engines/TernaryCounter_ScratchArena.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace TernaryCounter::Impl {

template <class MemorySpace>
using FloatVector = Kokkos::View<float*, MemorySpace>;
template <class MemorySpace>
using IntVector = Kokkos::View<std::int32_t*, MemorySpace>;

/// A matrix quantized by rows: q [R + int8_padding_rows, Kp] (zero padding), the rows' scales and
/// integer sums, in a call's scratch.
template <class MemorySpace>
struct QuantizedRows {
  Int8Matrix<MemorySpace> q;
  FloatVector<MemorySpace> scale;
  IntVector<MemorySpace> sums;

  QuantizedRows() = default;
  static std::size_t bytes(std::int64_t rows, std::int64_t depth) {
    return scratch_bytes<std::int8_t>((rows + int8_padding_rows) * padded_depth(depth)) +
           scratch_bytes<float>(rows) + scratch_bytes<std::int32_t>(rows);
  }
  template <class ExecSpace>
  QuantizedRows(const ExecSpace& space, ScratchArena<ExecSpace>& arena, std::int64_t rows,
                std::int64_t depth)
      : q(arena.template take<std::int8_t>((rows + int8_padding_rows) * padded_depth(depth)),
          rows + int8_padding_rows, padded_depth(depth)),
        scale(arena.template take<float>(rows), rows),
        sums(arena.template take<std::int32_t>(rows), rows) {
    Kokkos::deep_copy(
        space, Kokkos::subview(q, std::make_pair(rows, rows + int8_padding_rows), Kokkos::ALL),
        std::int8_t(0));
  }
};

}  // namespace TernaryCounter::Impl
