// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What tells a file's contents apart when the ranks of a run compare the files they read.
#pragma once

#include <TernaryCounter_Crc32c.hpp>

#include <cstdio>
#include <string>
#include <string_view>

namespace TernaryCounter::Examples {

/// "<size> bytes, CRC-32C <crc>" of `bytes`.
inline std::string content_identity(std::string_view bytes) {
  char crc[9];
  std::snprintf(crc, sizeof crc, "%08x", crc32c(bytes));
  return std::to_string(bytes.size()) + " bytes, CRC-32C " + crc;
}

}  // namespace TernaryCounter::Examples
