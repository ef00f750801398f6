// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A checkpoint's file I/O: a file replaced atomically (a crash leaves the old file or the new
// one, never a mix) and a regular file read without blocking on a FIFO or device.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace TernaryCounter::Impl {

/// What failed, and why (strerror).
struct FileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// True when `path` names nothing or a regular file: a symbolic link, device, FIFO or folder is
/// never replaced (the rename would replace it, as root even /dev/null).
bool replaceable(const std::string& path);

/// Writes `bytes` into a new temporary file beside `path` (`<path>.tmp-XXXXXX`, after removing
/// those an interrupted write left), syncs it, renames it over `path` and syncs the folder.
/// Throws FileError ("<what failed> for <path>: <why>") and leaves no temporary file.
void replace_file(const std::string& path, std::string_view bytes);

/// A regular file open for reading; opening a FIFO, device or folder throws FileError without
/// waiting for a writer.
class ReadableFile {
 public:
  explicit ReadableFile(const std::string& path);
  ~ReadableFile();
  ReadableFile(const ReadableFile&) = delete;
  ReadableFile& operator=(const ReadableFile&) = delete;

  /// The file's size when opened.
  std::uint64_t size() const { return size_; }
  /// Appends the next `count` bytes to `out`; false on a read error or an early end of file.
  bool read_exactly(std::string& out, std::uint64_t count);

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace TernaryCounter::Impl
