// The operands of the tile GEMM engine (TernaryCounter_TileGemm.hpp). An operand is read as
// elements (k, j): k runs along the product's depth (the summed index), j along the tile's rows
// (operand A) or columns (operand B). load(k, j) returns four consecutive elements, either along
// the depth (k .. k+3 of one j: along_depth) or across (j .. j+3 of one k), and zero past the
// operand's edges (the engine never sums those: past the depth it stops early, past the rows and
// columns it stores nothing).
#pragma once

#include "TernaryCounter_Codes.hpp"
#include "impl/TernaryCounter_Float4.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

/// A float matrix: element (k, j) is view(k, first + j), or view(j, k) when AlongDepth (the
/// depth is then the matrix's contiguous index).
template <class MemorySpace, bool AlongDepth>
struct MatrixOperand {
  static constexpr bool along_depth = AlongDepth;
  using view_type = Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace>;

  view_type view;
  std::int64_t first = 0;  ///< offset of j = 0 (a chunk of the matrix's columns)
  std::int64_t depth = 0;  ///< valid k < depth
  std::int64_t width = 0;  ///< valid j < width
  bool vector = false;     ///< four-element runs may be read as one aligned 16-byte load

  MatrixOperand() = default;
  MatrixOperand(const view_type& v, std::int64_t first_, std::int64_t depth_, std::int64_t width_)
      : view(v), first(first_), depth(depth_), width(width_) {
    vector = reinterpret_cast<std::uintptr_t>(v.data()) % 16 == 0 && v.stride(0) % 4 == 0 &&
             first % 4 == 0;
  }

  KOKKOS_INLINE_FUNCTION Float4 load(std::int64_t k, std::int64_t j) const {
    Float4 q;
    if constexpr (AlongDepth) {
      if (vector && j < width && k + 3 < depth)
        return *reinterpret_cast<const Float4*>(&view(j, k));
      for (int e = 0; e < 4; ++e) q.v[e] = (j < width && k + e < depth) ? view(j, k + e) : 0.0f;
    } else {
      if (vector && k < depth && j + 3 < width) {
        return *reinterpret_cast<const Float4*>(&view(k, first + j));
      }
      for (int e = 0; e < 4; ++e) {
        q.v[e] = (k < depth && j + e < width) ? view(k, first + j + e) : 0.0f;
      }
    }
    return q;
  }
};

/// t of a valid code without an integer division: t = [k >= lv] + [k >= 2 lv] - 1.
KOKKOS_INLINE_FUNCTION float ternary_value(std::uint32_t word, int lane, int lv) {
  const int k = group_code(word, lane);
  return float(int(k >= lv) + int(k >= 2 * lv) - 1);
}

/// The packed weights, decoded while they are staged: a four-element run is one 3-byte group of
/// codes. Element (k, j) is t[j, k] when AlongDepth (forward: the depth is the input column),
/// else scale[k] * t[k, j] (backward_input: the depth is the output row; scale * t is exact).
template <class MemorySpace, bool AlongDepth>
struct TernaryOperand {
  static constexpr bool along_depth = AlongDepth;
  using codes_view = Kokkos::View<const std::uint8_t**, Kokkos::LayoutRight, MemorySpace>;

  codes_view codes;                               ///< [out, 3 in / 4]
  Kokkos::View<const float*, MemorySpace> scale;  ///< [out], read when !AlongDepth
  int lv = 0;                                     ///< counter levels 2C - 1

  KOKKOS_INLINE_FUNCTION std::int64_t rows() const { return codes.extent(0); }
  KOKKOS_INLINE_FUNCTION std::int64_t cols() const {
    return std::int64_t(codes.extent(1)) / bytes_per_group * codes_per_group;
  }

  KOKKOS_INLINE_FUNCTION Float4 load(std::int64_t k, std::int64_t j) const {
    // Runs start at multiples of 4 along the columns, so a run is exactly one group.
    const std::int64_t row = AlongDepth ? j : k, col = AlongDepth ? k : j;
    Float4 q;
    if (row >= rows() || col >= cols()) {
      for (int e = 0; e < 4; ++e) q.v[e] = 0.0f;
      return q;
    }
    const std::uint32_t word = load_group(&codes(row, bytes_per_group * (col / codes_per_group)));
    const float s = AlongDepth ? 1.0f : scale(row);
    for (int e = 0; e < 4; ++e)
      q.v[e] = AlongDepth ? ternary_value(word, e, lv) : s * ternary_value(word, e, lv);
    return q;
  }
};

}  // namespace TernaryCounter::Impl
