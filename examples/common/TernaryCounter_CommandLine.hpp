// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Command-line helpers shared by the example programs.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace TernaryCounter::CommandLine {

/// The whole of `text` as an integer >= lo; otherwise std::invalid_argument naming `flag`.
inline std::int64_t parse_integer(const std::string& flag, const std::string& text,
                                  std::int64_t lo) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::logic_error&) {
    used = 0;
  }
  if (used != text.size() || value < lo) {
    throw std::invalid_argument(flag + " needs an integer >= " + std::to_string(lo) + ", got '" +
                                text + "'");
  }
  return value;
}

}  // namespace TernaryCounter::CommandLine
