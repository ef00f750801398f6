// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// IDX parsing and the gzip layer (zlib's inflate with automatic gzip header detection).
#include "Idx.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#if TERNARYCOUNTER_HAVE_ZLIB
#include <zlib.h>
#endif

namespace TernaryCounter::Idx {

namespace {

constexpr std::uint8_t unsigned_byte_type = 0x08;
constexpr int max_rank = 4;  // images are rank 3, labels rank 1: more is a corrupt header

std::uint32_t big_endian_u32(std::string_view bytes, std::size_t at) {
  std::uint32_t value = 0;
  for (std::size_t k = 0; k < 4; ++k) value = (value << 8) | std::uint8_t(bytes[at + k]);
  return value;
}

// The size an IDX image claims (header + product of the dimensions) once `bytes` holds its
// header; 0 while it does not yet, max_bytes + 1 when it claims more than max_bytes. What is
// wrong with a header is for parse to say: a bad magic claims what it holds.
std::uint64_t claimed_size(std::string_view bytes) {
  if (bytes.size() < 4) return 0;
  if (bytes[0] != 0 || bytes[1] != 0) return 4;  // not IDX: parse needs no more to say so
  const int rank = std::uint8_t(bytes[3]);
  const std::size_t header = 4 + 4 * std::size_t(rank);
  if (bytes.size() < header) return 0;
  std::uint64_t count = 1;
  for (int d = 0; d < rank; ++d) {
    count *= big_endian_u32(bytes, 4 + 4 * std::size_t(d));
    if (count > max_bytes) return max_bytes + 1;
  }
  return header + count;
}

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && std::uint8_t(bytes[0]) == 0x1f && std::uint8_t(bytes[1]) == 0x8b;
}

std::string gunzip(std::string_view compressed, const std::string& path) {
#if TERNARYCOUNTER_HAVE_ZLIB
  z_stream stream{};
  // 16 + MAX_WBITS: expect a gzip wrapper (and check its CRC and length trailer).
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
    throw IdxError(path + ": zlib inflateInit2 failed");
  }
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = uInt(compressed.size());
  std::string out;
  char chunk[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk);
    stream.avail_out = sizeof(chunk);
    rc = inflate(&stream, Z_NO_FLUSH);
    out.append(chunk, sizeof(chunk) - stream.avail_out);
    // All input used and the stream not at its end: the file is truncated.
    if (rc == Z_OK && stream.avail_in == 0 && stream.avail_out != 0) rc = Z_BUF_ERROR;
    // Bounded by what the IDX header claims (a gzip bomb stops here, not in memory).
    const std::uint64_t claimed = claimed_size(out);
    if (claimed == 4 && out.size() >= 4) {  // not IDX: parse says so
      inflateEnd(&stream);
      return out;
    }
    if ((claimed != 0 && out.size() > claimed) || out.size() > max_bytes) {
      inflateEnd(&stream);
      throw IdxError(path + ": the gzip data inflates past the " +
                     (claimed == 0 || claimed > max_bytes
                          ? std::to_string(max_bytes) + "-byte limit"
                          : std::to_string(claimed) + " bytes its IDX header claims"));
    }
  }
  const std::size_t unused = stream.avail_in;
  const std::string zlib_message = stream.msg ? stream.msg : "error " + std::to_string(rc);
  inflateEnd(&stream);
  if (rc == Z_BUF_ERROR) throw IdxError(path + ": truncated gzip data (the stream ends early)");
  if (rc != Z_STREAM_END) throw IdxError(path + ": corrupt gzip data (zlib: " + zlib_message + ")");
  if (unused != 0) {
    throw IdxError(path + ": " + std::to_string(unused) + " bytes after the end of the gzip data");
  }
  return out;
#else
  (void)compressed;
  throw IdxError(path +
                 " is gzip-compressed, but this program was built without zlib: install "
                 "zlib (Debian: zlib1g-dev) and rebuild, or gunzip the file");
#endif
}

}  // namespace

Array parse(std::string_view bytes, const std::string& source) {
  if (bytes.size() < 4) {
    throw IdxError(source + ": " + std::to_string(bytes.size()) +
                   " bytes is shorter than an IDX header");
  }
  if (bytes[0] != 0 || bytes[1] != 0) {
    throw IdxError(source + ": not an IDX file (the magic number must start with two zero bytes)");
  }
  const std::uint8_t type = std::uint8_t(bytes[2]);
  const int rank = std::uint8_t(bytes[3]);
  if (type != unsigned_byte_type) {
    std::ostringstream hex;
    hex << std::hex << int(type);
    throw IdxError(source + ": element type 0x" + hex.str() + " is not unsigned byte (0x08)");
  }
  if (rank < 1 || rank > max_rank) {
    throw IdxError(source + ": rank " + std::to_string(rank) + " is not in [1, " +
                   std::to_string(max_rank) + "]");
  }
  const std::size_t header = 4 + 4 * std::size_t(rank);
  if (bytes.size() < header) {
    throw IdxError(source + ": truncated header (" + std::to_string(bytes.size()) + " bytes, " +
                   std::to_string(header) + " needed for rank " + std::to_string(rank) + ")");
  }
  Array array;
  std::uint64_t count = 1;
  for (int d = 0; d < rank; ++d) {
    const std::uint32_t n = big_endian_u32(bytes, 4 + 4 * std::size_t(d));
    if (n == 0) throw IdxError(source + ": dimension " + std::to_string(d) + " is 0");
    array.dims.push_back(n);
    count *= n;  // at most 4 factors below 2^32 each could overflow: checked against the size
    if (count > bytes.size()) break;
  }
  if (array.dims.size() != std::size_t(rank) || bytes.size() - header != count) {
    std::string shape;
    for (int d = 0; d < rank; ++d) {
      shape += (d ? "x" : "") + std::to_string(big_endian_u32(bytes, 4 + 4 * std::size_t(d)));
    }
    throw IdxError(
        source + ": " + std::to_string(bytes.size() - header) +
        " data bytes, but the header's shape " + shape + " needs " +
        (array.dims.size() == std::size_t(rank) ? std::to_string(count) : std::string("more")) +
        (bytes.size() - header < count ? " (truncated file)" : " (trailing bytes)"));
  }
  array.data.assign(bytes.begin() + std::ptrdiff_t(header), bytes.end());
  return array;
}

std::string read_bytes(const std::string& path) {
  // Opened once, without blocking (a FIFO is refused, not waited on), and read only as far as
  // its size says.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw IdxError(path + ": cannot open the file: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) throw IdxError(path + ": cannot stat the file");
  if (!S_ISREG(info.st_mode)) {
    throw IdxError(path + ": not a regular file (a FIFO, device or folder is refused)");
  }
  const std::uint64_t size = std::uint64_t(info.st_size);
  if (size > max_bytes) {
    throw IdxError(path + ": " + std::to_string(size) + " bytes, more than the " +
                   std::to_string(max_bytes) + "-byte limit");
  }
  std::string bytes(std::size_t(size), '\0');
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, bytes.data() + done, std::size_t(size) - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw IdxError(path + ": read error (did the file shrink?)");
    done += std::size_t(n);
  }
  return is_gzip(bytes) ? gunzip(bytes, path) : bytes;
}

Array read(const std::string& path) {
  return parse(read_bytes(path), path);
}

void check_labels(const Array& labels, std::uint32_t count, std::uint32_t classes,
                  const std::string& source) {
  if (labels.dims.size() != 1 || labels.dims[0] != count) {
    std::string shape;
    for (std::size_t d = 0; d < labels.dims.size(); ++d) {
      shape += (d ? "x" : "") + std::to_string(labels.dims[d]);
    }
    throw IdxError(source + ": labels of shape " + shape + ", expected " + std::to_string(count) +
                   " (one per image)");
  }
  for (std::size_t k = 0; k < labels.data.size(); ++k) {
    if (labels.data[k] >= classes) {
      throw IdxError(source + ": label " + std::to_string(labels.data[k]) + " at index " +
                     std::to_string(k) + " is not below the " + std::to_string(classes) +
                     " classes");
    }
  }
}

}  // namespace TernaryCounter::Idx
