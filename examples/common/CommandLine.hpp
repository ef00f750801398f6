// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Command-line helpers shared by the example programs.
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace TernaryCounter::CommandLine {

/// The whole of `text` (decimal digits, an optional leading '-') as an integer in [lo, hi];
/// otherwise std::invalid_argument naming `flag`. An empty text, spaces, a '+' and values
/// outside int64 are refused, never read as 0 or wrapped.
inline std::int64_t parse_integer(const std::string& flag, const std::string& text, std::int64_t lo,
                                  std::int64_t hi = std::numeric_limits<std::int64_t>::max()) {
  std::int64_t value = 0;
  const char* const end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end || value < lo || value > hi) {
    throw std::invalid_argument(flag + " needs an integer in [" + std::to_string(lo) + ", " +
                                (hi == std::numeric_limits<std::int64_t>::max()
                                     ? std::string("2^63-1")
                                     : std::to_string(hi)) +
                                "], got '" + text + "'");
  }
  return value;
}

}  // namespace TernaryCounter::CommandLine
