// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hosts' engines of the integer products (see TernaryCounter_IntegerOperands.hpp for what
// they compute), chosen at run time: AMX tiles (`tdpbsud`, 16 x 16 x 64 products per
// instruction) on CPUs with AMX-INT8 whose kernel grants the tile state, else AVX-512 VNNI
// (`vpdpbusd`, 64 products per instruction), else AVX2 (`vpmaddubsw`, 32 products per
// instruction; HostInt8Avx2.hpp). TERNARYCOUNTER_HOST_ISA=avx512 asks for VNNI, avx2 for AVX2,
// baseline for the portable engine: the tests run every engine on one CPU.
//
// vpdpbusd multiplies unsigned bytes by signed bytes, so B is packed with an offset that makes it
// unsigned (t + 1 for ternary weights, q + 128 for int8) and the offset times A's row sums is
// subtracted afterwards: an integer identity, so the results equal the portable engine's.
//
// Blocking: threads take panels of B's columns, pack a panel (its whole depth, strips of 32
// columns, 4 depths per 32-bit word: the layout vpdpbusd, AMX's B tiles and vpmaddubsw read;
// HostInt8Panels.hpp) into a buffer of their own, and run micro-tiles over every row of A: 8 rows
// x 32 columns in 16 VNNI registers, 32 x 32 in four AMX accumulator tiles, or 2 x 32 in AVX2
// registers (strip by strip, so that the strip stays in L1). The panel stays in L2; only a panel
// of B is ever unpacked, never all of W.
#pragma once

#include "TernaryCounter_Codes.hpp"
#include "engines/TernaryCounter_HostInt8Avx2.hpp"
#include "engines/TernaryCounter_HostInt8Panels.hpp"
#include "engines/TernaryCounter_HostIsa.hpp"
#include "engines/TernaryCounter_IntegerOperands.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__) && \
    !defined(__HIPCC__)
#define TERNARYCOUNTER_HOST_VNNI 1
#include <immintrin.h>
#else
#define TERNARYCOUNTER_HOST_VNNI 0
#endif

namespace TernaryCounter::Impl::HostInt8 {

inline constexpr int micro_rows = 8;  ///< rows of a VNNI micro-tile (16 accumulators of 32)
inline constexpr int amx_rows = 32;   ///< rows of an AMX micro-tile: two 16-row A tiles
inline constexpr int amx_depth = 64;  ///< depths of one AMX tile product

using Engine = HostInt8Engine;

/// Whether the host quantizer runs its AVX-512 copy (host_isa()).
inline bool runs_avx512() {
  return host_isa().avx512_quantize;
}

/// Whether the CPU decodes packed codes in vector registers (vpermb, vpmultishiftqb).
inline bool runs_vbmi() {
  return host_isa().vbmi;
}

/// The engine of this CPU and TERNARYCOUNTER_HOST_ISA (host_isa()).
inline Engine engine() {
  return host_isa().int8_engine;
}

static_assert(amx_depth == int8_depth_padding && amx_rows <= int8_padding_rows);

#if TERNARYCOUNTER_HOST_VNNI
/// One micro-tile: rows [r0, r0 + MR) of A against one packed strip; sums (offset removed) of
/// the strip's first `width` columns go to epilogue.store_run.
template <int MR, class Epilogue>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void micro_tile(
    const std::int8_t* a, std::int64_t lda, const std::int32_t* row_sums, int offset,
    const std::uint32_t* strip, std::int64_t groups, std::int64_t r0, std::int64_t c0, int width,
    const Epilogue& epilogue) {
  __m512i acc[MR][2];
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_si512();
  const std::int8_t* rows = a + r0 * lda;
  for (std::int64_t k4 = 0; k4 < groups; ++k4) {
    const __m512i b0 = _mm512_loadu_si512(strip + k4 * strip_cols);
    const __m512i b1 = _mm512_loadu_si512(strip + k4 * strip_cols + 16);
    for (int i = 0; i < MR; ++i) {
      std::int32_t word;
      std::memcpy(&word, rows + i * lda + 4 * k4, 4);
      const __m512i av = _mm512_set1_epi32(word);
      acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], b0, av);
      acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], b1, av);
    }
  }
  alignas(64) std::int32_t sums[strip_cols];
  for (int i = 0; i < MR; ++i) {
    const __m512i correction = _mm512_set1_epi32(offset * row_sums[r0 + i]);
    _mm512_store_si512(sums, _mm512_sub_epi32(acc[i][0], correction));
    _mm512_store_si512(sums + 16, _mm512_sub_epi32(acc[i][1], correction));
    epilogue.store_run(r0 + i, c0, width, sums);
  }
}

template <class Epilogue>
void micro_tile_rows(int mr, const std::int8_t* a, std::int64_t lda, const std::int32_t* row_sums,
                     int offset, const std::uint32_t* strip, std::int64_t groups, std::int64_t r0,
                     std::int64_t c0, int width, const Epilogue& epilogue) {
  switch (mr) {
#define TERNARYCOUNTER_MICRO_ROWS(N)                                                 \
  case N:                                                                            \
    micro_tile<N>(a, lda, row_sums, offset, strip, groups, r0, c0, width, epilogue); \
    return;
    TERNARYCOUNTER_MICRO_ROWS(1)
    TERNARYCOUNTER_MICRO_ROWS(2)
    TERNARYCOUNTER_MICRO_ROWS(3)
    TERNARYCOUNTER_MICRO_ROWS(4)
    TERNARYCOUNTER_MICRO_ROWS(5)
    TERNARYCOUNTER_MICRO_ROWS(6)
    TERNARYCOUNTER_MICRO_ROWS(7)
    TERNARYCOUNTER_MICRO_ROWS(8)
#undef TERNARYCOUNTER_MICRO_ROWS
  }
}

/// The AMX tile configuration: tiles 0-3 hold a 32 x 32 block of sums (16 x 16 int32 each),
/// tiles 4-5 two 16-row slices of A (64 depths), tiles 6-7 two 16-column slices of a packed
/// strip (16 groups of 4 depths).
struct alignas(64) AmxConfig {
  std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {};
  std::uint8_t rows[16] = {};
  AmxConfig() {
    for (int t = 0; t < 8; ++t) {
      bytes_per_row[t] = 64;
      rows[t] = 16;
    }
  }
};

/// Rows [r0, r0 + 32) of A (the rows past `rows` are padding) against one packed strip; sums of
/// the valid rows and the strip's first `width` columns go to epilogue.store_run.
template <class Epilogue>
__attribute__((target("amx-tile,amx-int8,avx512f,avx512bw"))) void amx_tile(
    const std::int8_t* a, std::int64_t lda, const std::int32_t* row_sums, int offset,
    const std::uint32_t* strip, std::int64_t groups, std::int64_t rows, std::int64_t r0,
    std::int64_t c0, int width, const Epilogue& epilogue) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const std::int8_t* top = a + r0 * lda;
  const std::int8_t* bottom = top + 16 * lda;
  for (std::int64_t g = 0; g < groups; g += amx_depth / 4) {
    _tile_loadd(4, top + 4 * g, lda);
    _tile_loadd(5, bottom + 4 * g, lda);
    _tile_loadd(6, strip + g * strip_cols, strip_cols * 4);
    _tile_loadd(7, strip + g * strip_cols + 16, strip_cols * 4);
    _tile_dpbsud(0, 4, 6);
    _tile_dpbsud(1, 4, 7);
    _tile_dpbsud(2, 5, 6);
    _tile_dpbsud(3, 5, 7);
  }
  alignas(64) std::int32_t sums[amx_rows][strip_cols];
  _tile_stored(0, &sums[0][0], strip_cols * 4);
  _tile_stored(1, &sums[0][16], strip_cols * 4);
  _tile_stored(2, &sums[16][0], strip_cols * 4);
  _tile_stored(3, &sums[16][16], strip_cols * 4);
  const int valid = int(std::min<std::int64_t>(amx_rows, rows - r0));
  for (int i = 0; i < valid; ++i) {
    const std::int32_t correction = offset * row_sums[r0 + i];
    for (int j = 0; j < strip_cols; ++j) sums[i][j] -= correction;
    epilogue.store_run(r0 + i, c0, width, sums[i]);
  }
}

__attribute__((target("amx-tile"))) inline void amx_begin() {
  static const AmxConfig config;
  _tile_loadconfig(&config);
}
__attribute__((target("amx-tile"))) inline void amx_end() {
  _tile_release();
}
#endif

#if TERNARYCOUNTER_HOST_VNNI
/// The t + 1 of 64 weights (48 bytes of packed codes, `bytes` of them valid), one per byte:
/// vpermb spreads each 3-byte group into a 32-bit word, vpmultishiftqb picks the four 6-bit codes
/// of each word, two compares turn codes into t + 1.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) inline __m512i decode_ternary_plus_one(
    const std::uint8_t* codes, int bytes, __m512i spread, __m512i fields, __m512i lv,
    __m512i two_lv) {
  const __m512i packed =
      _mm512_maskz_loadu_epi8(bytes >= 64 ? ~__mmask64(0) : (__mmask64(1) << bytes) - 1, codes);
  const __m512i words = _mm512_permutexvar_epi8(spread, packed);
  const __m512i k =
      _mm512_and_si512(_mm512_multishift_epi64_epi8(fields, words), _mm512_set1_epi8(63));
  const __m512i one = _mm512_set1_epi8(1);
  return _mm512_add_epi8(_mm512_maskz_mov_epi8(_mm512_cmpge_epu8_mask(k, lv), one),
                         _mm512_maskz_mov_epi8(_mm512_cmpge_epu8_mask(k, two_lv), one));
}

/// QuantizeRule::nearest of 16 levels w = (x / a) * 127: floor, then up where the rest is over
/// a half or a half above an odd integer (ties to even).
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512i round_half_even(__m512 w) {
  const __m512 f = _mm512_roundscale_ps(w, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512 d = _mm512_sub_ps(w, f), half = _mm512_set1_ps(0.5f);
  const __m512i whole = _mm512_cvttps_epi32(f), one = _mm512_set1_epi32(1);
  const __mmask16 up =
      _mm512_cmp_ps_mask(d, half, _CMP_GT_OQ) |
      (_mm512_cmp_ps_mask(d, half, _CMP_EQ_OQ) & _mm512_test_epi32_mask(whole, one));
  return _mm512_mask_add_epi32(whole, up, whole, one);
}

/// QuantizeRule(a).nearest of n floats into q, 16 lanes at a time (the same IEEE operations in
/// the same order as the scalar rule); returns the sum of the q. Call for a row whose absmax `a`
/// is positive and finite.
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline std::int32_t quantize_nearest_row(
    const float* x, std::int64_t n, float a, std::int8_t* q) {
  const __m512 divisor = _mm512_set1_ps(a), levels = _mm512_set1_ps(127.0f);
  __m512i sum = _mm512_setzero_si512();
  for (std::int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512i v = round_half_even(
        _mm512_mul_ps(_mm512_div_ps(_mm512_maskz_loadu_ps(lanes, x + i), divisor), levels));
    sum = _mm512_mask_add_epi32(sum, lanes, sum, v);
    _mm512_mask_cvtepi32_storeu_epi8(q + i, lanes, v);
  }
  return _mm512_reduce_add_epi32(sum);
}

/// QuantizeRule(a[j]).nearest of x[j], j < n (a multiple of 16), each column with its own absmax
/// a[j] (0 or non-finite: q = 0); the same operations as the scalar rule, 16 lanes at a time.
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline void quantize_nearest_columns(
    const float* x, std::int64_t n, const float* a, std::int8_t* q) {
  const __m512 levels = _mm512_set1_ps(127.0f), zero = _mm512_setzero_ps(),
               largest = _mm512_set1_ps(FLT_MAX);
  for (std::int64_t j = 0; j < n; j += 16) {
    const __m512 av = _mm512_loadu_ps(a + j);
    const __mmask16 keep =
        _mm512_cmp_ps_mask(av, zero, _CMP_GT_OQ) & _mm512_cmp_ps_mask(av, largest, _CMP_LE_OQ);
    const __m512 divisor = _mm512_mask_blend_ps(keep, _mm512_set1_ps(1.0f), av);
    const __m512 w = _mm512_maskz_mov_ps(
        keep, _mm512_mul_ps(_mm512_div_ps(_mm512_loadu_ps(x + j), divisor), levels));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + j), _mm512_cvtepi32_epi8(round_half_even(w)));
  }
}

/// forward of Samples samples: each output row's codes are decoded in registers once, 64 weights
/// at a time, and multiplied with every sample by vpdpbusd; no panel is packed. Rows
/// [o0, o1).
template <int Samples, class Epilogue>
__attribute__((target("avx512f,avx512bw,avx512vbmi,avx512vnni"))) void few_sample_rows(
    const std::int8_t* a, std::int64_t lda, const std::int32_t* row_sums,
    const Kokkos::View<const std::uint8_t**, Kokkos::LayoutRight, Kokkos::HostSpace>& codes, int C,
    std::int64_t o0, std::int64_t o1, const Epilogue& epilogue) {
  alignas(64) std::uint8_t spread_bytes[64], field_bytes[64];
  for (int j = 0; j < 64; ++j) {
    spread_bytes[j] = std::uint8_t(3 * (j / 4) + std::min(j % 4, 2));
    field_bytes[j] = std::uint8_t((j % 8 / 4) * 32 + (j % 4) * 6);
  }
  const __m512i spread = _mm512_load_si512(spread_bytes), fields = _mm512_load_si512(field_bytes);
  const __m512i lv = _mm512_set1_epi8(char(counter_levels(C)));
  const __m512i two_lv = _mm512_set1_epi8(char(2 * counter_levels(C)));
  const std::int64_t row_bytes = codes.extent(1);
  for (std::int64_t o = o0; o < o1; ++o) {
    const std::uint8_t* row = &codes(o, 0);
    __m512i acc[Samples];
    for (int m = 0; m < Samples; ++m) acc[m] = _mm512_setzero_si512();
    for (std::int64_t b = 0, i = 0; b < row_bytes; b += 48, i += 64) {
      const __m512i t = decode_ternary_plus_one(
          row + b, int(std::min<std::int64_t>(48, row_bytes - b)), spread, fields, lv, two_lv);
      for (int m = 0; m < Samples; ++m) {
        acc[m] = _mm512_dpbusd_epi32(acc[m], t, _mm512_loadu_si512(a + m * lda + i));
      }
    }
    for (int m = 0; m < Samples; ++m) {
      epilogue.store(m, o, _mm512_reduce_add_epi32(acc[m]) - row_sums[m]);
    }
  }
}
#endif

/// Whether forward of at most few_samples samples runs few_sample_forward (VBMI and a VNNI or
/// AMX engine).
inline bool runs_few_sample_forward() {
  return runs_vbmi() && (engine() == Engine::vnni || engine() == Engine::amx);
}

/// forward of at most few_samples samples on hosts with VBMI and VNNI (call only then): A =
/// the quantized samples [M + padding, lda], its depth padded with zeros to whole 64-weight
/// chunks.
inline constexpr std::int64_t few_samples = 4;
template <class ExecSpace, class Epilogue>
void few_sample_forward([[maybe_unused]] const ExecSpace& space,
                        [[maybe_unused]] const Int8Rows<Kokkos::HostSpace>& a,
                        [[maybe_unused]] const std::int32_t* row_sums,
                        [[maybe_unused]] const TernaryByColumn<Kokkos::HostSpace>& b,
                        [[maybe_unused]] std::int64_t samples,
                        [[maybe_unused]] const Epilogue& epilogue,
                        [[maybe_unused]] const char* label) {
#if TERNARYCOUNTER_HOST_VNNI
  constexpr std::int64_t rows_per_item = 16;
  const std::int64_t out = b.cols(), lda = a.q.stride(0);
  Kokkos::parallel_for(label,
                       Kokkos::RangePolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>>(
                           space, 0, (out + rows_per_item - 1) / rows_per_item),
                       [&](std::int64_t item) {
                         const std::int64_t o0 = item * rows_per_item,
                                            o1 = std::min(out, o0 + rows_per_item);
                         switch (samples) {
#define TERNARYCOUNTER_FEW_SAMPLES(N)                                              \
  case N:                                                                          \
    few_sample_rows<N>(a.q.data(), lda, row_sums, b.codes, b.C, o0, o1, epilogue); \
    return;
                           TERNARYCOUNTER_FEW_SAMPLES(1)
                           TERNARYCOUNTER_FEW_SAMPLES(2)
                           TERNARYCOUNTER_FEW_SAMPLES(3)
                           TERNARYCOUNTER_FEW_SAMPLES(4)
#undef TERNARYCOUNTER_FEW_SAMPLES
                         }
                       });
  space.fence(label);
#endif
}

/// C = A B on a host execution space with the AVX2, VNNI or AMX engine. A: [rows + padding_rows,
/// lda] int8, its depth padded with zeros to padded_depth, with row sums `row_sums`; b: cols()
/// columns.
template <class ExecSpace, class B, class Epilogue>
void gemm([[maybe_unused]] Engine engine, [[maybe_unused]] const ExecSpace& space,
          [[maybe_unused]] const Int8Rows<Kokkos::HostSpace>& a,
          [[maybe_unused]] const std::int32_t* row_sums, [[maybe_unused]] const B& b,
          [[maybe_unused]] int C, [[maybe_unused]] std::int64_t rows,
          [[maybe_unused]] std::int64_t cols, [[maybe_unused]] const Epilogue& epilogue,
          [[maybe_unused]] const char* label) {
#if TERNARYCOUNTER_HOST_VNNI
  if (rows == 0 || cols == 0) return;
  const std::int64_t lda = a.q.stride(0);
  const std::int64_t groups = a.q.extent(1) / 4;
  const int threads = space.concurrency();
  // Panel width: a multiple of 4 (whole code groups) and of the strip where it can be, within
  // the L2 budget, and small enough that every thread gets panels.
  const std::int64_t budget_cols = std::max<std::int64_t>(
      strip_cols,
      panel_budget_bytes / std::max<std::int64_t>(1, 4 * groups) / strip_cols * strip_cols);
  const std::int64_t share = (cols + 2 * threads - 1) / (2 * threads);
  const std::int64_t nc = std::max<std::int64_t>(
      strip_cols, std::min(budget_cols, (share + strip_cols - 1) / strip_cols * strip_cols));
  const std::int64_t panels = (cols + nc - 1) / nc;
  const std::int64_t panel_words = nc * groups;
  const TernaryPairTable table(C);
  Kokkos::Experimental::UniqueToken<ExecSpace> token(space);
  Kokkos::View<std::uint32_t**, Kokkos::LayoutRight, Kokkos::HostSpace> buffers(
      Kokkos::view_alloc(std::string(label) + "::panels", Kokkos::WithoutInitializing),
      token.size(), panel_words);
  constexpr bool ternary = b_offset<B> == 1;
  const int offset = engine == Engine::avx2 && !ternary ? 0 : b_offset<B>;
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>>(space, 0, panels),
      [&](std::int64_t p) {
        const int id = token.acquire();
        std::uint32_t* panel = &buffers(id, 0);
        const std::int64_t c0 = p * nc, width = std::min(nc, cols - c0);
        // The packing writes every word of columns [0, width); the rest of the last strip is
        // zeroed (its sums are never stored, but they must be numbers).
        if (width % strip_cols != 0) {
          std::uint32_t* last = panel + (width / strip_cols) * strip_cols * groups;
          std::fill(last, last + strip_cols * groups, 0u);
        }
        pack(b, table, groups, c0, width, panel, offset);
        if (engine == Engine::avx2) {  // a strip stays in L1 while every row passes
          for (std::int64_t j = 0; j < width; j += strip_cols) {
            for (std::int64_t r0 = 0; r0 < rows; r0 += avx2_rows) {
              avx2_tile_rows<ternary>(int(std::min<std::int64_t>(avx2_rows, rows - r0)), a.q.data(),
                                      lda, row_sums, offset, panel + j * groups, groups, r0, c0 + j,
                                      int(std::min<std::int64_t>(strip_cols, width - j)), epilogue);
            }
          }
          token.release(id);
          return;
        }
        if (engine == Engine::amx) {
          amx_begin();
          for (std::int64_t r0 = 0; r0 < rows; r0 += amx_rows) {
            for (std::int64_t j = 0; j < width; j += strip_cols) {
              amx_tile(a.q.data(), lda, row_sums, offset, panel + j * groups, groups, rows, r0,
                       c0 + j, int(std::min<std::int64_t>(strip_cols, width - j)), epilogue);
            }
          }
          amx_end();
          token.release(id);
          return;
        }
        for (std::int64_t r0 = 0; r0 < rows; r0 += micro_rows) {
          const int mr = int(std::min<std::int64_t>(micro_rows, rows - r0));
          for (std::int64_t j = 0; j < width; j += strip_cols) {
            micro_tile_rows(mr, a.q.data(), lda, row_sums, offset, panel + j * groups, groups, r0,
                            c0 + j, int(std::min<std::int64_t>(strip_cols, width - j)), epilogue);
          }
        }
        token.release(id);
      });
  space.fence(label);
#endif
}

}  // namespace TernaryCounter::Impl::HostInt8
