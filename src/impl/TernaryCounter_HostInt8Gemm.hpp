// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hosts' engine of the integer products (see TernaryCounter_IntegerOperands.hpp for what
// they compute): AVX-512 VNNI `vpdpbusd`, 64 int8 products per instruction, chosen at run time on
// CPUs that have it (TERNARYCOUNTER_HOST_ISA=baseline selects the portable engine, for tests).
//
// vpdpbusd multiplies unsigned bytes by signed bytes, so B is packed with an offset that makes it
// unsigned (t + 1 for ternary weights, q + 128 for int8) and the offset times A's row sums is
// subtracted afterwards: an integer identity, so the results equal the portable engine's.
//
// Blocking: threads take panels of B's columns, pack a panel (its whole depth, strips of 32
// columns, 4 depths per 32-bit word) into a buffer of their own, and run 8-row x 32-column
// register micro-tiles over every row of A; the panel stays in L2 and A's micro-panel in L1.
// Only a panel of B is ever unpacked, never all of W.
#pragma once

#include "TernaryCounter_Codes.hpp"
#include "impl/TernaryCounter_IntegerOperands.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
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

inline constexpr int strip_cols = 32;  ///< columns of a micro-tile: two 16-lane registers
inline constexpr int micro_rows = 8;   ///< rows of a micro-tile (16 accumulators of 32)
inline constexpr std::int64_t panel_budget_bytes = 256 << 10;  ///< a packed panel, in L2

/// True when the CPU runs AVX-512 BW + VNNI and TERNARYCOUNTER_HOST_ISA does not ask for the
/// baseline.
inline bool runs_vnni() {
#if TERNARYCOUNTER_HOST_VNNI
  const char* forced = std::getenv("TERNARYCOUNTER_HOST_ISA");
  if (forced != nullptr && std::strcmp(forced, "baseline") == 0) return false;
  static const bool cpu = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vnni");
  return cpu;
#else
  return false;
#endif
}

/// The unsigned offset the packing adds to B's values.
template <class B>
constexpr int b_offset = 128;
template <class M>
constexpr int b_offset<TernaryByColumn<M>> = 1;
template <class M>
constexpr int b_offset<TernaryByDepth<M>> = 1;

/// t + 1 of the two codes in 12 bits of a packed group, as two bytes.
struct TernaryPairTable {
  std::uint16_t bytes[4096];
  explicit TernaryPairTable(int C) {
    for (int pair = 0; pair < 4096; ++pair) {
      bytes[pair] = std::uint16_t((decode_ternary(pair & 63, C) + 1) |
                                  (decode_ternary(pair >> 6, C) + 1) << 8);
    }
  }
  /// The four t + 1 of a packed group's 24-bit word, one per byte.
  std::uint32_t expand(std::uint32_t word) const {
    return std::uint32_t(bytes[word & 4095u]) | std::uint32_t(bytes[word >> 12]) << 16;
  }
};

/// Word w of strip s in a packed panel: depths 4 k4 .. 4 k4 + 3 of panel column 32 s + j.
inline std::int64_t packed_index(std::int64_t groups, std::int64_t j, std::int64_t k4) {
  return (j / strip_cols) * groups * strip_cols + k4 * strip_cols + j % strip_cols;
}

/// Packs columns [c0, c0 + nc) of B, every depth group, into `panel` (see packed_index).
template <class M>
void pack(const TernaryByColumn<M>& b, const TernaryPairTable& table, std::int64_t groups,
          std::int64_t c0, std::int64_t nc, std::uint32_t* panel) {
  for (std::int64_t j = 0; j < nc; ++j) {
    const std::uint8_t* row = &b.codes(c0 + j, 0);
    std::uint32_t* strip = panel + packed_index(groups, j, 0);
    for (std::int64_t k4 = 0; k4 < groups; ++k4) {
      strip[k4 * strip_cols] = table.expand(load_group(row + 3 * k4));
    }
  }
}

template <class M>
void pack(const TernaryByDepth<M>& b, const TernaryPairTable& table, std::int64_t groups,
          std::int64_t c0, std::int64_t nc, std::uint32_t* panel) {
  const std::int64_t depth = b.depth();
  for (std::int64_t k4 = 0; k4 < groups; ++k4) {
    for (int e = 0; e < 4; ++e) {
      const std::int64_t k = 4 * k4 + e;
      for (std::int64_t j = 0; j < nc; j += 4) {  // c0 and nc are multiples of 4
        const std::uint32_t t4 =
            k < depth ? table.expand(load_group(&b.codes(k, 3 * ((c0 + j) / 4)))) : 0u;
        for (int l = 0; l < 4; ++l) {
          auto* bytes = reinterpret_cast<std::uint8_t*>(panel + packed_index(groups, j + l, k4));
          bytes[e] = std::uint8_t(t4 >> (8 * l));
        }
      }
    }
  }
}

template <class M>
void pack(const Int8ByDepth<M>& b, const TernaryPairTable&, std::int64_t groups, std::int64_t c0,
          std::int64_t nc, std::uint32_t* panel) {
  const std::int64_t depth = b.depth();
  for (std::int64_t k4 = 0; k4 < groups; ++k4) {
    for (int e = 0; e < 4; ++e) {
      const std::int64_t k = 4 * k4 + e;
      const std::int8_t* row = k < depth ? &b.q(k, c0) : nullptr;
      for (std::int64_t j = 0; j < nc; ++j) {
        auto* bytes = reinterpret_cast<std::uint8_t*>(panel + packed_index(groups, j, k4));
        bytes[e] = row != nullptr ? std::uint8_t(int(row[j]) + 128) : std::uint8_t(0);
      }
    }
  }
}

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
#endif

/// C = A B on a host execution space with the VNNI engine (call only where runs_vnni()). A:
/// [rows, lda] int8 with row sums `row_sums` (over the padded depth); b: cols() columns.
template <class ExecSpace, class B, class Epilogue>
void gemm([[maybe_unused]] const ExecSpace& space,
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
  const int offset = b_offset<B>;
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>>(space, 0, panels),
      [&](std::int64_t p) {
        const int id = token.acquire();
        std::uint32_t* panel = &buffers(id, 0);
        const std::int64_t c0 = p * nc, width = std::min(nc, cols - c0);
        // Columns past B's edge in the last strip: zero, their sums are never stored.
        std::fill(panel, panel + panel_words, 0u);
        pack(b, table, groups, c0, width, panel);
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
