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

#include "impl/TernaryCounter_FewSampleInt8Forward.hpp"
#include "impl/TernaryCounter_Float4.hpp"
#include "impl/TernaryCounter_IntegerOperands.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

/// The most samples whose gradient FewSampleGradientRows forms in the row update (4 words of
/// 4 int8 per column): past it, the work per weight outgrows the bytes the update streams, and
/// the GEMM (IntegerSumRows) is faster.
inline constexpr std::int64_t few_sample_update_max = 16;

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
  Kokkos::View<const float*, MemorySpace> col_scale;  ///< sx

  KOKKOS_INLINE_FUNCTION Float4 group(std::int64_t r, std::int64_t c) const {
    const Int4 s = *reinterpret_cast<const Int4*>(sums + r * stride + c);
    const float sg = row_scale(r);
    Float4 g;
    for (int j = 0; j < 4; ++j) g.v[j] = float(s.v[j]) * (sg * col_scale(c + j));
    return g;
  }
};

/// G(r, i) = sum over m of gq(r, m) * xq(i, m), the first `words` words of 4 samples of each
/// (the rest is zero padding).
template <class MemorySpace>
struct FewSampleGradientRows {
  static constexpr int max_words = int(few_sample_update_max / 4);
  /// Loads are of L1-resident operands and the sums are the work: one group at a time keeps the
  /// registers of the row update's cap.
  static constexpr int batch = 1;
  Kokkos::View<const std::int8_t**, Kokkos::LayoutRight, MemorySpace> gq;  ///< these rows
  Kokkos::View<const std::int8_t**, Kokkos::LayoutRight, MemorySpace> xq;  ///< [in, Mp]
  Kokkos::View<const float*, MemorySpace> row_scale;                       ///< sg of these rows
  Kokkos::View<const float*, MemorySpace> col_scale;                       ///< sx
  int words = 0;  ///< ceil(M / 4), at most max_words

  KOKKOS_INLINE_FUNCTION static std::uint32_t word(const std::int8_t* p) {
    return *reinterpret_cast<const std::uint32_t*>(p);
  }
  KOKKOS_INLINE_FUNCTION Float4 group(std::int64_t r, std::int64_t c) const {
    std::uint32_t a[max_words];
    for (int w = 0; w < max_words; ++w) a[w] = w < words ? word(&gq(r, 4 * w)) : 0u;
    const float sg = row_scale(r);
    Float4 g;
    for (int j = 0; j < 4; ++j) {
      std::int32_t s = 0;
      for (int w = 0; w < max_words; ++w) {
        if (w < words) s = dot4(a[w], word(&xq(c + j, 4 * w)), s);
      }
      g.v[j] = float(s) * (sg * col_scale(c + j));
    }
    return g;
  }
};

}  // namespace TernaryCounter::Impl
