// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Reading IDX files (the MNIST / Fashion-MNIST format), plain or gzip-compressed (host only).
//
// Layout: a 4-byte magic 0x00 0x00 <type> <rank>, then `rank` big-endian uint32 dimensions, then
// the product of the dimensions elements. Only type 0x08 (unsigned byte) is read: it is what the
// image and label files hold.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace TernaryCounter::Idx {

/// A file that cannot be read or is not a well-formed unsigned-byte IDX file; what() says why.
struct IdxError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// An unsigned-byte IDX array: its dimensions and its row-major elements.
struct Array {
  std::vector<std::uint32_t> dims;
  std::vector<std::uint8_t> data;
};

/// Parses a whole (decompressed) IDX image. Throws IdxError naming `source` for a bad magic, a
/// type other than unsigned byte, a rank of 0 or above 4, a zero dimension, or a size that is
/// not exactly the header plus the product of the dimensions (truncated or trailing bytes).
Array parse(std::string_view bytes, const std::string& source = "IDX data");

/// The largest file or decompressed image read_bytes accepts.
inline constexpr std::uint64_t max_bytes = (std::uint64_t(1) << 32) - 1;  // zlib's uInt

/// The bytes of `path`, gunzipped when they start with the gzip magic (1f 8b). Throws IdxError
/// when the file cannot be read or is not a regular file, is larger than max_bytes, or its gzip
/// stream is corrupt, truncated, or inflates past the size its IDX header claims (checked as
/// it inflates, so a gzip bomb is never held in memory).
std::string read_bytes(const std::string& path);

/// parse(read_bytes(path), path).
Array read(const std::string& path);

/// Checks that `labels` is a rank-1 array of `count` values, each below `classes`; throws
/// IdxError naming `source`, the first bad index and value otherwise.
void check_labels(const Array& labels, std::uint32_t count, std::uint32_t classes,
                  const std::string& source);

}  // namespace TernaryCounter::Idx
