// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "checkpoint/impl/TernaryCounter_AtomicFile.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace TernaryCounter::Impl {

namespace {

// Removes the <path>.tmp-XXXXXX regular files an interrupted save of `path` left in `dir`.
void remove_stale_temporaries(const std::string& dir, const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string() + ".tmp-";
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string entry = it->path().filename().string();
    if (entry.size() == name.size() + 6 && entry.starts_with(name) && it->is_regular_file(ec) &&
        !it->is_symlink(ec)) {
      ::unlink(it->path().c_str());
    }
  }
}

}  // namespace

bool replaceable(const std::string& path) {
  struct stat existing {};
  return !(::lstat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode));
}

void replace_file(const std::string& path, std::string_view bytes) {
  const std::size_t slash = path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  remove_stale_temporaries(dir, path);
  std::string tmp = path + ".tmp-XXXXXX";
  const auto fail = [&](const std::string& what, bool remove) {
    const std::string why = std::strerror(errno);
    if (remove) ::unlink(tmp.c_str());
    throw FileError(what + " for " + path + ": " + why);
  };
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) fail("cannot create a temporary file", false);
  ::fchmod(fd, 0644);
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      fail("write failed", true);
    }
    written += std::size_t(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("fsync failed", true);
  }
  if (::close(fd) != 0) fail("close failed", true);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename failed", true);
  // Make the rename itself durable.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

ReadableFile::ReadableFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd_ < 0) throw FileError(std::string("cannot open the file: ") + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd_);
    throw FileError("cannot stat the file: " + why);
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd_);
    throw FileError("not a regular file (a FIFO, device or folder is refused)");
  }
  size_ = std::uint64_t(info.st_size);
}

ReadableFile::~ReadableFile() {
  ::close(fd_);
}

bool ReadableFile::read_exactly(std::string& out, std::uint64_t count) {
  const std::size_t start = out.size();
  out.resize(start + std::size_t(count));
  std::size_t done = 0;
  while (done < count) {
    const ssize_t n = ::read(fd_, out.data() + start + done, std::size_t(count) - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += std::size_t(n);
  }
  return true;
}

}  // namespace TernaryCounter::Impl
