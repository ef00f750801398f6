// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Byte-lane arithmetic on packed codes for the GPUs' integer kernels: the 4 codes of a group
// decoded into the 4 bytes of a word without branches, 4 x 4 byte transposes and 4-way byte dot
// products. Decoding: the codes are spread into the bytes of a word, and u = [code >= lv] +
// [code >= 2 lv] is formed in each byte by adding 128 - lv (no byte carries: code < 64,
// lv <= 32) and taking bit 7; t = u - 1.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

/// a . b of 4 signed bytes each, plus c.
KOKKOS_INLINE_FUNCTION std::int32_t dot4(std::uint32_t a, std::uint32_t b, std::int32_t c) {
#if defined(__CUDA_ARCH__)
  return __dp4a(int(a), int(b), c);
#else
  for (int e = 0; e < 4; ++e) {
    c += std::int32_t(std::int8_t(a >> (8 * e))) * std::int32_t(std::int8_t(b >> (8 * e)));
  }
  return c;
#endif
}

/// u = [code >= lv] + [code >= 2 lv] in each byte, for the group's 4 codes (24-bit word).
KOKKOS_INLINE_FUNCTION std::uint32_t ternary_plus_one(std::uint32_t group, std::uint32_t above_lv,
                                                      std::uint32_t above_2lv) {
  const std::uint32_t b = (group & 0x3Fu) | ((group << 2) & 0x3F00u) | ((group << 4) & 0x3F0000u) |
                          ((group << 6) & 0x3F000000u);
  return (((b + above_lv) >> 7) & 0x01010101u) + (((b + above_2lv) >> 7) & 0x01010101u);
}

/// The 4 group words (24 bits each) of 16 codes from their 12 bytes, read as three 32-bit words.
KOKKOS_INLINE_FUNCTION void split_groups(const std::uint32_t w[3], std::uint32_t g[4]) {
  g[0] = w[0] & 0xFFFFFFu;
  g[1] = ((w[0] >> 24) | (w[1] << 8)) & 0xFFFFFFu;
  g[2] = ((w[1] >> 16) | (w[2] << 16)) & 0xFFFFFFu;
  g[3] = w[2] >> 8;
}

/// t = u - 1 in each byte (-1, 0, +1 as int8), for the group's 4 codes: (u + 0x7F) ^ 0x80 per
/// byte (no byte borrows).
KOKKOS_INLINE_FUNCTION std::uint32_t ternary_bytes(std::uint32_t group, std::uint32_t above_lv,
                                                   std::uint32_t above_2lv) {
  return (ternary_plus_one(group, above_lv, above_2lv) + 0x7F7F7F7Fu) ^ 0x80808080u;
}

/// Byte s of the 8 bytes (y:x) for each selector nibble (CUDA's __byte_perm, selectors < 8).
KOKKOS_INLINE_FUNCTION std::uint32_t byte_perm(std::uint32_t x, std::uint32_t y,
                                               std::uint32_t selector) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, selector);
#else
  const std::uint64_t both = std::uint64_t(y) << 32 | x;
  std::uint32_t r = 0;
  for (int b = 0; b < 4; ++b) {
    const std::uint32_t s = (selector >> (4 * b)) & 7u;
    r |= std::uint32_t((both >> (8 * s)) & 0xFFu) << (8 * b);
  }
  return r;
#endif
}

/// The 4 x 4 bytes of a[0..3] transposed: byte r of column[e] = byte e of a[r].
KOKKOS_INLINE_FUNCTION void transpose_bytes(const std::uint32_t (&a)[4],
                                            std::uint32_t (&column)[4]) {
  const std::uint32_t lo01 = byte_perm(a[0], a[1], 0x5140u), hi01 = byte_perm(a[0], a[1], 0x7362u);
  const std::uint32_t lo23 = byte_perm(a[2], a[3], 0x5140u), hi23 = byte_perm(a[2], a[3], 0x7362u);
  column[0] = byte_perm(lo01, lo23, 0x5410u);
  column[1] = byte_perm(lo01, lo23, 0x7632u);
  column[2] = byte_perm(hi01, hi23, 0x5410u);
  column[3] = byte_perm(hi01, hi23, 0x7632u);
}

}  // namespace TernaryCounter::Impl
