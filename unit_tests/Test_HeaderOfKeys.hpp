// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A checkpoint header of `keys` metadata entries, 12 bytes each ("%07zx":0,): the hostile
// header of the header-limit tests.
#pragma once

#include <cstdio>
#include <string>

namespace TernaryCounter::Test {

inline std::string metadata_header_with_keys(std::size_t keys) {
  std::string header = "{\"__metadata__\":{";
  header.reserve(header.size() + 12 * keys + 8);
  char key[16];
  for (std::size_t k = 0; k < keys; ++k) {
    std::snprintf(key, sizeof key, "\"%07zx\":0,", k);
    header += key;
  }
  header.back() = '}';
  header += '}';
  return header;
}

}  // namespace TernaryCounter::Test
