// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The examples' IDX reader: well-formed files read back exactly; every malformed one (magic,
// type, rank, dimensions, size, gzip stream, label range) is rejected with a message that names
// the problem. The files are made here, byte by byte; no data set is needed.
#include <Idx.hpp>

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#if TERNARYCOUNTER_HAVE_ZLIB
#include <zlib.h>
#endif

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using TernaryCounter::Idx::Array;
using TernaryCounter::Idx::IdxError;

// An unsigned-byte IDX image with the given dimensions and data (type and rank overridable).
std::string idx_bytes(const std::vector<std::uint32_t>& dims, const std::vector<std::uint8_t>& data,
                      int type = 0x08, int rank = -1) {
  std::string bytes{char(0), char(0), char(type), char(rank < 0 ? int(dims.size()) : rank)};
  for (std::uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(char((d >> shift) & 0xFF));
  }
  bytes.append(data.begin(), data.end());
  return bytes;
}

std::vector<std::uint8_t> ramp(std::size_t n) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t k = 0; k < n; ++k) v[k] = std::uint8_t(k * 7 + 3);
  return v;
}

// Expects parse(bytes) to throw IdxError whose message contains `what`.
void expect_rejected(const std::string& bytes, const std::string& what) {
  try {
    TernaryCounter::Idx::parse(bytes, "test.idx");
    ADD_FAILURE() << "accepted a file that should fail with '" << what << "'";
  } catch (const IdxError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("test.idx"), std::string::npos) << message;
    EXPECT_NE(message.find(what), std::string::npos)
        << "'" << message << "' lacks '" << what << "'";
  }
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("ternary-counter-test-idx-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

TEST(Idx, ReadsImagesAndLabels) {
  const std::vector<std::uint8_t> pixels = ramp(3 * 4 * 5);
  const Array images = TernaryCounter::Idx::parse(idx_bytes({3, 4, 5}, pixels));
  EXPECT_EQ(images.dims, (std::vector<std::uint32_t>{3, 4, 5}));
  EXPECT_EQ(images.data, pixels);
  const Array labels = TernaryCounter::Idx::parse(idx_bytes({3}, {2, 0, 9}));
  EXPECT_EQ(labels.dims, (std::vector<std::uint32_t>{3}));
  EXPECT_NO_THROW(TernaryCounter::Idx::check_labels(labels, 3, 10, "labels"));
}

TEST(Idx, RejectsMalformedHeaders) {
  const std::vector<std::uint8_t> data = ramp(6);
  expect_rejected("", "shorter than an IDX header");
  expect_rejected(std::string("\0\0\x08", 3), "shorter than an IDX header");
  std::string bad_magic = idx_bytes({2, 3}, data);
  bad_magic[0] = 'P';  // e.g. a PNG or text file
  expect_rejected(bad_magic, "magic");
  expect_rejected(idx_bytes({2, 3}, ramp(24), 0x0D), "not unsigned byte");  // float elements
  expect_rejected(idx_bytes({}, {}, 0x08, 0), "rank 0");
  expect_rejected(idx_bytes({1, 1, 1, 1, 6}, data), "rank 5");
  expect_rejected(idx_bytes({2, 3}, {}, 0x08, 3), "truncated header");  // 3 dims announced, 2 given
  expect_rejected(idx_bytes({2, 0, 3}, {}), "dimension 1 is 0");
}

TEST(Idx, RejectsWrongSizes) {
  expect_rejected(idx_bytes({2, 3}, ramp(5)), "truncated file");
  expect_rejected(idx_bytes({2, 3}, ramp(7)), "trailing bytes");
  // Dimensions whose product overflows 64 bits must not wrap around to a size that matches.
  expect_rejected(idx_bytes({65536, 65536, 65536, 65536}, ramp(16)), "truncated file");
}

TEST(Idx, RejectsBadLabels) {
  const Array labels = TernaryCounter::Idx::parse(idx_bytes({4}, {1, 9, 10, 3}));
  EXPECT_THROW(
      {
        try {
          TernaryCounter::Idx::check_labels(labels, 4, 10, "labels.idx");
        } catch (const IdxError& e) {
          EXPECT_NE(std::string(e.what()).find("label 10 at index 2"), std::string::npos)
              << e.what();
          throw;
        }
      },
      IdxError);
  EXPECT_THROW(TernaryCounter::Idx::check_labels(labels, 5, 11, "labels.idx"), IdxError);  // count
  const Array matrix = TernaryCounter::Idx::parse(idx_bytes({2, 2}, {0, 1, 2, 3}));
  EXPECT_THROW(TernaryCounter::Idx::check_labels(matrix, 2, 10, "labels.idx"), IdxError);  // rank
}

TEST(Idx, ReadsPlainFilesAndRejectsMissingOnes) {
  const std::string path = temp_path("plain.idx");
  const std::vector<std::uint8_t> data = ramp(12);
  write_file(path, idx_bytes({3, 4}, data));
  EXPECT_EQ(TernaryCounter::Idx::read(path).data, data);
  std::filesystem::remove(path);
  EXPECT_THROW(TernaryCounter::Idx::read(path), IdxError);
}

#if TERNARYCOUNTER_HAVE_ZLIB
std::string gzip(const std::string& bytes) {
  const std::string path = temp_path("tmp.gz");
  gzFile file = gzopen(path.c_str(), "wb");
  gzwrite(file, bytes.data(), unsigned(bytes.size()));
  gzclose(file);
  std::ifstream in(path, std::ios::binary);
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  return out;
}

TEST(Idx, ReadsGzipAndRejectsBrokenStreams) {
  const std::string path = temp_path("data.idx.gz");
  const std::vector<std::uint8_t> data = ramp(5000);
  const std::string compressed = gzip(idx_bytes({50, 100}, data));
  write_file(path, compressed);
  const Array array = TernaryCounter::Idx::read(path);
  EXPECT_EQ(array.dims, (std::vector<std::uint32_t>{50, 100}));
  EXPECT_EQ(array.data, data);

  const auto expect_read_fails = [&](const std::string& bytes, const std::string& what) {
    write_file(path, bytes);
    try {
      TernaryCounter::Idx::read(path);
      ADD_FAILURE() << "accepted a broken gzip file (" << what << ")";
    } catch (const IdxError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_read_fails(compressed.substr(0, compressed.size() / 2), "truncated");
  expect_read_fails(compressed.substr(0, compressed.size() - 4), "truncated");  // no length
  std::string corrupt = compressed;
  corrupt[corrupt.size() - 6] ^= 0x5A;  // the CRC no longer matches
  expect_read_fails(corrupt, "corrupt");
  expect_read_fails(compressed + "junk", "after the end of the gzip data");
  // A complete gzip stream of a malformed IDX image is still rejected by the parser.
  expect_read_fails(gzip(idx_bytes({50, 100}, ramp(4999))), "truncated file");
  // A stream that inflates past what its header claims stops there (a gzip bomb is never held
  // in memory): 64 MiB of zeros after a 5000-byte image.
  expect_read_fails(gzip(idx_bytes({50, 100}, data) + std::string(std::size_t(64) << 20, '\0')),
                    "inflates past the 5012 bytes its IDX header claims");
  std::filesystem::remove(path);
}
#endif

TEST(Idx, RefusesFilesThatAreNotRegular) {
  const std::string fifo = temp_path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Refused at once: opening a FIFO for reading would wait for a writer forever.
  EXPECT_THROW(TernaryCounter::Idx::read(fifo), IdxError);
  std::filesystem::remove(fifo);
  EXPECT_THROW(TernaryCounter::Idx::read("/dev/zero"), IdxError);
  EXPECT_THROW(TernaryCounter::Idx::read(std::filesystem::temp_directory_path().string()),
               IdxError);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
