// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// CRC-32C (Castagnoli: reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF,
// the checksum of iSCSI, ext4 and SSE4.2's crc32 instruction): the checksum of checkpoint
// headers and tensors (docs/CHECKPOINT_FORMAT.md). A CRC detects every single-bit error and
// every burst of up to 32 bits. Host code, a byte-wise table.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace TernaryCounter {

namespace Impl {
inline constexpr std::array<std::uint32_t, 256> crc32c_table = [] {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t c = b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (c & 1u ? 0x82F63B78u : 0u);
    table[b] = c;
  }
  return table;
}();
}  // namespace Impl

/// CRC-32C of `size` bytes at `data`, continuing `crc` (the CRC of the bytes before them; 0 to
/// start): crc32c(b, crc32c(a)) == crc32c(a + b). crc32c("123456789") == 0xE3069283.
inline std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (std::size_t k = 0; k < size; ++k)
    crc = (crc >> 8) ^ Impl::crc32c_table[(crc ^ p[k]) & 0xFFu];
  return ~crc;
}

inline std::uint32_t crc32c(std::string_view bytes, std::uint32_t crc = 0) {
  return crc32c(bytes.data(), bytes.size(), crc);
}

}  // namespace TernaryCounter
