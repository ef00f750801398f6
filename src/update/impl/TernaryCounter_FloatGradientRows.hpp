// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// update_from_io's FP32 weight gradient of a few samples (SPEC §3 step 1) as the row update reads
// it: a group of 4 columns of one row at a time, each value the fma chain over the samples in
// ascending order, formed where the row update needs it (in both of its passes: the row sums and
// the code update). For a few samples that chain is shorter than the trip through memory it
// replaces (the tile engine writes 4 bytes per weight, which the row update then reads): here x is
// read from cache and nothing of size [out, in] is written.
#pragma once

#include "TernaryCounter_ViewTypes.hpp"
#include "engines/TernaryCounter_Float4.hpp"
#include "engines/TernaryCounter_Unroll.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

/// The most samples whose FP32 gradient the row update forms itself. Each sample costs both
/// passes an fma and a load per weight: on an H100 at 16384x16384 the row update takes 0.97 ms
/// at M = 1 and 1.77 ms at M = 4, where the tile engine's path takes about 1.52 ms at either
/// (docs/results/h100_4d3b8af/perf_few_sample.txt); about 0.27 ms a sample puts the break-even
/// near 3.
inline constexpr std::int64_t few_sample_update_fp32_max = 2;

/// g(r, i) = the chain acc = fma(grad_out(m, first_row + r), x(m, i), acc) from 0 over m
/// ascending: the same chain as the tile engine's GradientProduct, so the same bits.
template <class MemorySpace>
struct FewSampleFloatGradientRows {
  /// Groups the row sums load together (RowUpdateKernel::for_each_group): the operands are small
  /// and shared by every row (cache-resident), so one group at a time.
  static constexpr int batch = 1;
  InputView<MemorySpace> x;         ///< [M, in], M <= few_sample_update_fp32_max
  InputView<MemorySpace> grad_out;  ///< [M, out]
  std::int64_t first_row = 0;       ///< grad_out's column of the row update's row 0

  /// Row r's groups: its grad_out values looked up once.
  struct Row {
    float a[few_sample_update_fp32_max];
    int M;
    const float* x;         ///< x(0, 0)
    std::int64_t x_stride;  ///< between samples
    KOKKOS_INLINE_FUNCTION Float4 group(std::int64_t c) const {
      Float4 g{{0.0f, 0.0f, 0.0f, 0.0f}};
      TERNARYCOUNTER_UNROLL
      for (int m = 0; m < int(few_sample_update_fp32_max); ++m) {
        if (m >= M) break;
        const float* xm = x + m * x_stride + c;
        for (int j = 0; j < 4; ++j) g.v[j] = Kokkos::fma(a[m], xm[j], g.v[j]);
      }
      return g;
    }
  };
  KOKKOS_INLINE_FUNCTION Row row(std::int64_t r) const {
    Row row{{}, int(x.extent(0)), x.data(), std::int64_t(x.stride(0))};
    for (int m = 0; m < int(few_sample_update_fp32_max); ++m) {
      row.a[m] = m < row.M ? grad_out(m, first_row + r) : 0.0f;
    }
    return row;
  }
};

}  // namespace TernaryCounter::Impl
