// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The integer path's weight gradient (SPEC §6, update from IO) as the row update reads it: a
// group of 4 columns of one row at a time, g(o, i) = float(G(o, i)) * (sg_o * sx_i), formed where
// the row update needs it instead of in a pass of its own over [out, in] floats in memory.
// - IntegerSumRows: G from a GEMM's int32 rows (the workspace the GEMM wrote); the scales applied
//   on the way in replace the epilogue pass that wrote the float rows back.
// - FewSampleGradientRows: G summed from the quantized operands themselves (gq [out, Mp] and
//   xq [in, Mp], the samples contiguous), for a few samples: then nothing of size [out, in] is
//   written at all, and the update streams the codes once (read, update, write).
// An integer sum is exact in any order, and the two products are those of GradientEpilogue, so
// every source gives the bits of the float rows it replaces.
#pragma once

#include "engines/TernaryCounter_Capabilities.hpp"
#include "engines/TernaryCounter_FewSampleInt8Forward.hpp"
#include "engines/TernaryCounter_Float4.hpp"
#include "engines/TernaryCounter_IntegerOperands.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

struct alignas(16) Int4 {
  std::int32_t v[4];
};

/// G from int32 rows in memory: `sums` 16-byte aligned with a row stride of whole Int4s
/// (RowUpdateKernel::vector_rows of the float view over the same memory).
template <class MemorySpace>
struct IntegerSumRows {
  /// Groups the row sums load together (RowUpdateKernel::for_each_group): a load each.
  static constexpr int batch = 4;
  const std::int32_t* sums = nullptr;
  std::int64_t stride = 0;
  Kokkos::View<const float*, MemorySpace> row_scale;  ///< sg of these rows
  Kokkos::View<const float*, MemorySpace> col_scale;  ///< sx, 16-byte aligned

  /// Row r's groups: its sums and sg looked up once.
  struct Row {
    const std::int32_t* sums;
    float sg;
    const float* sx;
    KOKKOS_INLINE_FUNCTION Float4 group(std::int64_t c) const {
      const Int4 s = *reinterpret_cast<const Int4*>(sums + c);
      const Float4 x = *reinterpret_cast<const Float4*>(sx + c);
      Float4 g;
      for (int j = 0; j < 4; ++j) g.v[j] = float(s.v[j]) * (sg * x.v[j]);
      return g;
    }
  };
  KOKKOS_INLINE_FUNCTION Row row(std::int64_t r) const {
    return {sums + r * stride, row_scale(r), col_scale.data()};
  }
};

/// G(r, i) = sum over m of gq(r, m) * xq(m, i), the first `words` words of 4 samples of each
/// (the rest is zero padding). x's words are laid out [word, column] (pack_sample_words), so that
/// a group's 4 columns are one 16-byte load and a warp's loads are contiguous: read from
/// TiledColumnQuantizer's [column, Mp] rows, 64 bytes apart, every load of a warp touched 32
/// lines.
template <class MemorySpace>
struct FewSampleGradientRows {
  static constexpr int max_words = int(few_sample_update_max / 4);
  /// The operands are small and shared by every row (cache-resident), and the sums are the work:
  /// one group at a time keeps the registers of the row update's cap.
  static constexpr int batch = 1;
  Kokkos::View<const std::int8_t**, Kokkos::LayoutRight, MemorySpace> gq;  ///< these rows [, Mp]
  Kokkos::View<const std::uint32_t**, Kokkos::LayoutRight, MemorySpace> x_words;  ///< [words, in]
  Kokkos::View<const float*, MemorySpace> row_scale;  ///< sg of these rows
  Kokkos::View<const float*, MemorySpace> col_scale;  ///< sx, 16-byte aligned
  int words = 0;                                      ///< ceil(M / 4), at most max_words

  /// Row r's groups: its words of gq and its sg held in registers, loaded once per unit of the
  /// row update (8 groups): read per group, behind the code stores between groups (which the
  /// compiler must assume alias them), they cost each group a reload and its 64-bit address
  /// arithmetic.
  struct Row {
    std::uint32_t a[max_words];
    float sg;
    int words;
    const std::uint32_t* x;  ///< x_words(0, 0)
    std::int64_t x_stride;   ///< between words of a column
    const float* sx;
    KOKKOS_INLINE_FUNCTION Float4 group(std::int64_t c) const {
      std::int32_t s[4] = {0, 0, 0, 0};
      const std::uint32_t* xc = x + c;
      for (int w = 0; w < max_words; ++w) {
        if (w >= words) break;
        const Int4 xw = *reinterpret_cast<const Int4*>(xc + w * x_stride);
        for (int j = 0; j < 4; ++j) s[j] = dot4(a[w], std::uint32_t(xw.v[j]), s[j]);
      }
      const Float4 x4 = *reinterpret_cast<const Float4*>(sx + c);
      Float4 g;
      for (int j = 0; j < 4; ++j) g.v[j] = float(s[j]) * (sg * x4.v[j]);
      return g;
    }
  };
  KOKKOS_INLINE_FUNCTION Row row(std::int64_t r) const {
    Row row{
        {}, row_scale(r), words, x_words.data(), std::int64_t(x_words.stride(0)), col_scale.data()};
    for (int w = 0; w < max_words; ++w) {
      row.a[w] = w < words ? *reinterpret_cast<const std::uint32_t*>(&gq(r, 4 * w)) : 0u;
    }
    return row;
  }
};

/// x_words(w, i) = samples 4w..4w+3 of xq's column i (xq [in, Mp], TiledColumnQuantizer's).
template <class ExecSpace>
void pack_sample_words(const ExecSpace& space,
                       const Kokkos::View<const std::int8_t**, Kokkos::LayoutRight,
                                          typename ExecSpace::memory_space>& xq,
                       const Kokkos::View<std::uint32_t**, Kokkos::LayoutRight,
                                          typename ExecSpace::memory_space>& x_words) {
  const std::int64_t in = x_words.extent(1);
  Kokkos::parallel_for(
      "TernaryCounter::update_from_io::pack_sample_words",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
          space, 0, std::int64_t(x_words.extent(0)) * in),
      KOKKOS_LAMBDA(std::int64_t k) {
        const std::int64_t w = k / in, i = k % in;
        x_words(w, i) = *reinterpret_cast<const std::uint32_t*>(&xq(i, 4 * w));
      });
}

}  // namespace TernaryCounter::Impl
