// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The AVX2 engine's micro-tiles (HostInt8Gemm.hpp drives them): CPUs with AVX2 but no AVX-512
// VNNI. They read the same packed panels as the VNNI engine (HostInt8Panels.hpp: 4 depths of a
// column per 32-bit word) and leave the same int32 sums, exactly: every intermediate below is
// bounded within its type, so no instruction saturates or wraps (SPEC §6: |q| <= 127).
//
// Ternary B (packed as u = t + 1 in {0, 1, 2}): vpmaddubsw (u unsigned, a signed) gives int16
// u0 a0 + u1 a1, |.| <= 2 * 2 * 128 = 512; these are added in int16 over at most avx2_chunk = 32
// groups (|.| <= 16384 < 32767), then widened by vpmaddwd with ones into the int32 sums. The
// offset's products (A's row sums) are subtracted at the end, as in the VNNI engine.
//
// int8 B (packed as it is, offset 0): vpmaddubsw(|a|, sign(b, a)) (vpsignb) gives int16
// |a0| (b0 sgn a0) + |a1| (b1 sgn a1) = a0 b0 + a1 b1, |.| <= 2 * 128 * 127 = 32512 < 32767
// (|a| <= 128 read unsigned; sign(b, a) needs |b| <= 127, which the quantizers guarantee), widened
// at once by vpmaddwd with ones.
//
// Micro-tiles of 2 rows x 32 columns: 8 accumulators of 8 lanes (int32; ternary B: int16, their
// int32 sums touched once per chunk) beside the broadcast A words and a strip's row of B in the
// 16 ymm registers. Compiled by target("avx2,fma"), so builds without architecture flags run them
// too.
#pragma once

#include "engines/TernaryCounter_HostInt8Panels.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__) && \
    !defined(__HIPCC__)
#define TERNARYCOUNTER_HOST_AVX2_INT8 1
#include <immintrin.h>
#else
#define TERNARYCOUNTER_HOST_AVX2_INT8 0
#endif

namespace TernaryCounter::Impl::HostInt8 {

inline constexpr int avx2_rows = 2;    ///< rows of an AVX2 micro-tile
inline constexpr int avx2_chunk = 32;  ///< groups summed in int16 before widening (see above)
inline constexpr int avx2_regs = strip_cols / 8;  ///< ymm registers per row of a strip

#if TERNARYCOUNTER_HOST_AVX2_INT8
/// Rows [r0, r0 + MR) of A against one packed strip: B ternary as t + 1 (Ternary) or int8 as it
/// is; sums (offset * row sum removed) of the strip's first `width` columns go to
/// epilogue.store_run.
template <int MR, bool Ternary, class Epilogue>
__attribute__((target("avx2,fma"))) void avx2_tile(const std::int8_t* a, std::int64_t lda,
                                                   const std::int32_t* row_sums, int offset,
                                                   const std::uint32_t* strip, std::int64_t groups,
                                                   std::int64_t r0, std::int64_t c0, int width,
                                                   const Epilogue& epilogue) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[MR][avx2_regs];
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < avx2_regs; ++r) acc[i][r] = _mm256_setzero_si256();
  const std::int8_t* rows = a + r0 * lda;
  if constexpr (Ternary) {
    for (std::int64_t g0 = 0; g0 < groups; g0 += avx2_chunk) {
      const std::int64_t g1 = std::min<std::int64_t>(groups, g0 + avx2_chunk);
      __m256i part[MR][avx2_regs];
      for (int i = 0; i < MR; ++i)
        for (int r = 0; r < avx2_regs; ++r) part[i][r] = _mm256_setzero_si256();
      for (std::int64_t k4 = g0; k4 < g1; ++k4) {
        const std::uint32_t* words = strip + k4 * strip_cols;
        __m256i av[MR];
        for (int i = 0; i < MR; ++i) {
          std::int32_t word;
          std::memcpy(&word, rows + i * lda + 4 * k4, 4);
          av[i] = _mm256_set1_epi32(word);
        }
        for (int r = 0; r < avx2_regs; ++r) {
          const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 8 * r));
          for (int i = 0; i < MR; ++i) {
            part[i][r] = _mm256_add_epi16(part[i][r], _mm256_maddubs_epi16(b, av[i]));
          }
        }
      }
      for (int i = 0; i < MR; ++i)
        for (int r = 0; r < avx2_regs; ++r)
          acc[i][r] = _mm256_add_epi32(acc[i][r], _mm256_madd_epi16(part[i][r], ones));
    }
  } else {
    for (std::int64_t k4 = 0; k4 < groups; ++k4) {
      const std::uint32_t* words = strip + k4 * strip_cols;
      __m256i av[MR], magnitude[MR];
      for (int i = 0; i < MR; ++i) {
        std::int32_t word;
        std::memcpy(&word, rows + i * lda + 4 * k4, 4);
        av[i] = _mm256_set1_epi32(word);
        magnitude[i] = _mm256_abs_epi8(av[i]);
      }
      for (int r = 0; r < avx2_regs; ++r) {
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 8 * r));
        for (int i = 0; i < MR; ++i) {
          const __m256i pairs = _mm256_maddubs_epi16(magnitude[i], _mm256_sign_epi8(b, av[i]));
          acc[i][r] = _mm256_add_epi32(acc[i][r], _mm256_madd_epi16(pairs, ones));
        }
      }
    }
  }
  alignas(32) std::int32_t sums[strip_cols];
  for (int i = 0; i < MR; ++i) {
    const __m256i correction = _mm256_set1_epi32(offset * row_sums[r0 + i]);
    for (int r = 0; r < avx2_regs; ++r) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(sums + 8 * r),
                         _mm256_sub_epi32(acc[i][r], correction));
    }
    epilogue.store_run(r0 + i, c0, width, sums);
  }
}

/// avx2_tile of `mr` (1 .. avx2_rows) rows.
template <bool Ternary, class Epilogue>
void avx2_tile_rows(int mr, const std::int8_t* a, std::int64_t lda, const std::int32_t* row_sums,
                    int offset, const std::uint32_t* strip, std::int64_t groups, std::int64_t r0,
                    std::int64_t c0, int width, const Epilogue& epilogue) {
  if (mr == 2) {
    avx2_tile<2, Ternary>(a, lda, row_sums, offset, strip, groups, r0, c0, width, epilogue);
  } else {
    avx2_tile<1, Ternary>(a, lda, row_sums, offset, strip, groups, r0, c0, width, epilogue);
  }
}
#endif

}  // namespace TernaryCounter::Impl::HostInt8
