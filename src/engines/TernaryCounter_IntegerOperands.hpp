// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The operands and the portable engine of the integer products (SPEC §6):
// C[r, c] = sum over k of A[r, k] * B[k, c], every term an int8 x int8 (or int8 x ternary)
// product, summed in int32. An integer sum is exact in any order, so the engines below (this
// portable one, the hosts' VNNI one) may add in whatever order suits them and agree to the bit.
//
// A is always an int8 matrix [R, Kp] with the depth contiguous and zero-padded to a multiple of 4
// (a quantizer writes it). B is read by groups of 4 consecutive depths at one column:
// group(k4, c, b) sets b[e] = B[4 k4 + e, c], 0 past the depth.
#pragma once

#include "TernaryCounter_Codes.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

template <class MemorySpace>
using Int8Matrix = Kokkos::View<std::int8_t**, Kokkos::LayoutRight, MemorySpace>;

/// A quantized operand's depth is padded with zeros to a multiple of this (whole AMX tile
/// products on hosts; the engines' 4-deep groups everywhere), and it has this many zero rows past
/// its last (the AMX engine reads whole 32-row slices).
inline constexpr std::int64_t int8_depth_padding = 64;
inline constexpr std::int64_t int8_padding_rows = 32;
KOKKOS_INLINE_FUNCTION constexpr std::int64_t padded_depth(std::int64_t k) {
  return (k + int8_depth_padding - 1) / int8_depth_padding * int8_depth_padding;
}

/// The quantized operand A [R, Kp].
template <class MemorySpace>
struct Int8Rows {
  Kokkos::View<const std::int8_t**, Kokkos::LayoutRight, MemorySpace> q;

  KOKKOS_INLINE_FUNCTION void group(std::int64_t r, std::int64_t k4, int a[4]) const {
    for (int e = 0; e < 4; ++e) a[e] = q(r, 4 * k4 + e);
  }
};

/// B[k, c] = t[c, k]: forward's weights (k = input column i, c = output row o). The 4 depths of
/// a group are one packed group of codes.
template <class MemorySpace>
struct TernaryByColumn {
  Kokkos::View<const std::uint8_t**, Kokkos::LayoutRight, MemorySpace> codes;
  int C = 8;

  KOKKOS_INLINE_FUNCTION std::int64_t depth() const { return codes.extent(1) / 3 * 4; }
  KOKKOS_INLINE_FUNCTION std::int64_t cols() const { return codes.extent(0); }
  KOKKOS_INLINE_FUNCTION void group(std::int64_t k4, std::int64_t c, int b[4]) const {
    if (4 * k4 >= depth()) {  // the operands' depth padding
      for (int e = 0; e < 4; ++e) b[e] = 0;
      return;
    }
    const std::uint32_t word = load_group(&codes(c, 3 * k4));
    for (int e = 0; e < 4; ++e) b[e] = decode_ternary(group_code(word, e), C);
  }
};

/// B[k, c] = t[k, c]: backward_input's weights (k = output row o, c = input column i).
template <class MemorySpace>
struct TernaryByDepth {
  Kokkos::View<const std::uint8_t**, Kokkos::LayoutRight, MemorySpace> codes;
  int C = 8;

  KOKKOS_INLINE_FUNCTION std::int64_t depth() const { return codes.extent(0); }
  KOKKOS_INLINE_FUNCTION std::int64_t cols() const { return codes.extent(1) / 3 * 4; }
  KOKKOS_INLINE_FUNCTION int element(std::int64_t k, std::int64_t c) const {
    const std::uint32_t word = load_group(&codes(k, 3 * (c / 4)));
    return decode_ternary(group_code(word, int(c % 4)), C);
  }
  KOKKOS_INLINE_FUNCTION void group(std::int64_t k4, std::int64_t c, int b[4]) const {
    for (int e = 0; e < 4; ++e) {
      const std::int64_t k = 4 * k4 + e;
      b[e] = k < depth() ? element(k, c) : 0;
    }
  }
};

/// B[k, c] = q[k, c]: the weight gradient's quantized inputs (k = sample m, c = input column i).
template <class MemorySpace>
struct Int8ByDepth {
  Kokkos::View<const std::int8_t**, Kokkos::LayoutRight, MemorySpace> q;

  KOKKOS_INLINE_FUNCTION std::int64_t depth() const { return q.extent(0); }
  KOKKOS_INLINE_FUNCTION std::int64_t cols() const { return q.extent(1); }
  KOKKOS_INLINE_FUNCTION void group(std::int64_t k4, std::int64_t c, int b[4]) const {
    for (int e = 0; e < 4; ++e) {
      const std::int64_t k = 4 * k4 + e;
      b[e] = k < depth() ? q(k, c) : 0;
    }
  }
};

/// B[k, c] = q[c, k]: an int8 matrix stored by B's columns, depth contiguous and zero-padded (the
/// weight gradient's quantized inputs on GPUs, transposed for the vendor GEMM).
template <class MemorySpace>
struct Int8ByColumn {
  Kokkos::View<const std::int8_t**, Kokkos::LayoutRight, MemorySpace> q;

  KOKKOS_INLINE_FUNCTION void group(std::int64_t k4, std::int64_t c, int b[4]) const {
    for (int e = 0; e < 4; ++e) b[e] = q(c, 4 * k4 + e);
  }
};

/// The portable engine: one work item per 4 x 4 block of C, its 16 sums in registers, over the
/// depth's groups. Runs on every backend; epilogue.store(r, c, sum) writes each result.
template <class ExecSpace, class B, class Epilogue>
struct PortableIntegerProduct {
  Int8Rows<typename ExecSpace::memory_space> a;
  B b;
  Epilogue epilogue;
  std::int64_t rows = 0, cols = 0, groups = 0;

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t rb, std::int64_t cb) const {
    const std::int64_t r0 = 4 * rb, c0 = 4 * cb;
    std::int32_t acc[4][4] = {};
    for (std::int64_t k4 = 0; k4 < groups; ++k4) {
      int av[4][4] = {}, bv[4][4] = {};
      for (int i = 0; i < 4; ++i)
        if (r0 + i < rows) a.group(r0 + i, k4, av[i]);
      for (int j = 0; j < 4; ++j)
        if (c0 + j < cols) b.group(k4, c0 + j, bv[j]);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          for (int e = 0; e < 4; ++e) acc[i][j] += av[i][e] * bv[j][e];
    }
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        if (r0 + i < rows && c0 + j < cols) epilogue.store(r0 + i, c0 + j, acc[i][j]);
  }

  void run(const ExecSpace& space, const char* label) const {
    if (rows == 0 || cols == 0) return;
    Kokkos::parallel_for(
        label,
        Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>, Kokkos::IndexType<std::int64_t>>(
            space, {0, 0}, {(rows + 3) / 4, (cols + 3) / 4}),
        *this);
  }
};

}  // namespace TernaryCounter::Impl
