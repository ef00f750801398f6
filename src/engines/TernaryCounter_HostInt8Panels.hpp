// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The panels of B that the hosts' integer engines (HostInt8Gemm.hpp) multiply: a panel of B's
// columns, its whole depth, in strips of 32 columns, 4 depths per 32-bit word (one byte each): the
// layout that vpdpbusd, AMX's B tiles and the AVX2 engine's vpmaddubsw all read. Ternary weights
// are packed as t + 1 (0, 1, 2), int8 values with an offset that the engine chooses.
#pragma once

#include "TernaryCounter_Codes.hpp"
#include "engines/TernaryCounter_IntegerOperands.hpp"

#include <algorithm>
#include <cstdint>

namespace TernaryCounter::Impl::HostInt8 {

inline constexpr int strip_cols = 32;  ///< columns of a strip: 32 words (128 bytes) per group
inline constexpr std::int64_t panel_budget_bytes = 256 << 10;  ///< a packed panel, in L2

/// The unsigned offset the VNNI and AMX engines' packing adds to B's values (vpdpbusd reads B
/// unsigned); the AVX2 engine packs int8 B as it is (offset 0, see HostInt8Avx2.hpp).
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
          std::int64_t c0, std::int64_t nc, std::uint32_t* panel, int /*offset: 1*/ = 1) {
  for (std::int64_t j = 0; j < nc; ++j) {
    const std::uint8_t* row = &b.codes(c0 + j, 0);
    std::uint32_t* strip = panel + packed_index(groups, j, 0);
    const std::int64_t real = std::min(groups, b.depth() / 4);  // the rest is depth padding
    for (std::int64_t k4 = 0; k4 < real; ++k4) {
      strip[k4 * strip_cols] = table.expand(load_group(row + 3 * k4));
    }
    for (std::int64_t k4 = real; k4 < groups; ++k4) strip[k4 * strip_cols] = 0u;
  }
}

template <class M>
void pack(const TernaryByDepth<M>& b, const TernaryPairTable& table, std::int64_t groups,
          std::int64_t c0, std::int64_t nc, std::uint32_t* panel, int /*offset: 1*/ = 1) {
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
          std::int64_t nc, std::uint32_t* panel, int offset = 128) {
  const std::int64_t depth = b.depth();
  for (std::int64_t k4 = 0; k4 < groups; ++k4) {
    for (int e = 0; e < 4; ++e) {
      const std::int64_t k = 4 * k4 + e;
      const std::int8_t* row = k < depth ? &b.q(k, c0) : nullptr;
      for (std::int64_t j = 0; j < nc; ++j) {
        auto* bytes = reinterpret_cast<std::uint8_t*>(panel + packed_index(groups, j, k4));
        bytes[e] = row != nullptr ? std::uint8_t(int(row[j]) + offset) : std::uint8_t(0);
      }
    }
  }
}

}  // namespace TernaryCounter::Impl::HostInt8
