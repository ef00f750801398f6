// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Checkpoint files: the safetensors layout byte by byte, round trips, crash-safe writes and
// every way the loader must refuse a file (leaving the caller's state untouched).
#include "Test_Common.hpp"
#include "Test_HeaderOfKeys.hpp"

#include <TernaryCounter_Crc32c.hpp>

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

namespace TernaryCounter::Test {
namespace {

namespace fs = std::filesystem;

PackedState<Kokkos::HostSpace> sample_state(std::int64_t out, std::int64_t in, int C,
                                            std::uint32_t seed) {
  Kokkos::View<std::uint8_t**, Kokkos::HostSpace> codes("codes", out, in);
  Kokkos::View<float*, Kokkos::HostSpace> scale("scale", out), v("v", out);
  for (std::int64_t o = 0; o < out; ++o) {
    for (std::int64_t i = 0; i < in; ++i) {
      codes(o, i) = std::uint8_t(hash_u32(seed ^ std::uint32_t(o * in + i)) % code_count(C));
    }
    scale(o) = 0.25f + 0.125f * float(o) + float(seed % 7);
    v(o) = 1e-3f * float(o + 1);
  }
  return pack_state("sample", codes, scale, v, C);
}

Checkpoint sample_checkpoint() {
  Checkpoint c;
  c.C = 8;
  c.step = 42;
  c.metadata["note"] = "a \"quoted\" note\n";
  c.layers.push_back({"fc1", sample_state(3, 8, 8, 1)});
  c.layers.push_back({"fc2", sample_state(2, 4, 8, 2)});
  return c;
}

bool same_state(const PackedState<Kokkos::HostSpace>& a, const PackedState<Kokkos::HostSpace>& b) {
  if (a.out() != b.out() || a.in() != b.in() || a.C != b.C) return false;
  for (std::int64_t o = 0; o < a.out(); ++o) {
    for (std::size_t k = 0; k < a.codes.extent(1); ++k) {
      if (a.codes(o, k) != b.codes(o, k)) return false;
    }
    if (std::memcmp(&a.scale(o), &b.scale(o), 4) || std::memcmp(&a.v(o), &b.v(o), 4)) return false;
  }
  return true;
}

std::uint64_t read_u64(const std::string& s, std::size_t at) {
  std::uint64_t x = 0;
  for (int b = 0; b < 8; ++b) x |= std::uint64_t(static_cast<unsigned char>(s[at + b])) << (8 * b);
  return x;
}

std::string crc_hex(std::uint32_t crc) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", crc);
  return text;
}

// Rebuilds a file image with a new header (the length prefix follows it) and, when the header
// holds one, a header checksum that matches it: an edit is then refused for what it changes,
// not for the checksum.
std::string with_header(const std::string& image, std::string header) {
  const std::uint64_t n = read_u64(image, 0);
  const std::string data = image.substr(8 + n);
  std::string out(8, '\0');
  for (int b = 0; b < 8; ++b) out[b] = char((header.size() >> (8 * b)) & 0xFF);
  out += header;
  const std::string key = "\"header_crc32c\":\"";
  const std::size_t at = out.find(key);
  if (at != std::string::npos && out.find(key, at + 1) == std::string::npos &&
      out.size() >= at + key.size() + 8) {
    out.replace(at + key.size(), 8, "00000000");
    out.replace(at + key.size(), 8, crc_hex(crc32c(out)));
  }
  return out + data;
}

std::string header_of(const std::string& image) {
  return image.substr(8, read_u64(image, 0));
}

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  const std::size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() /
                       ("ternarycounter-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

TEST(Checkpoint, FileLayoutIsSafetensors) {
  const Checkpoint c = sample_checkpoint();
  const std::string image = serialize_checkpoint(c);
  const std::uint64_t n = read_u64(image, 0);
  ASSERT_LE(8 + n, image.size());
  EXPECT_EQ(n % 8, 0u) << "header padded to 8 bytes";
  const std::string header = header_of(image);
  EXPECT_EQ(header.front(), '{');
  EXPECT_EQ(header[header.find_last_not_of(' ')], '}');
  // Exact expected header text (tensors: F32 first, then U8; offsets relative to the data).
  // Checksums: CRC-32C of each tensor's bytes, and of the length and header with the header's
  // own digits as '0'.
  const std::size_t data_at = 8 + n;
  const auto crc_of = [&](std::size_t begin, std::size_t end) {
    return crc_hex(crc32c(image.data() + data_at + begin, end - begin));
  };
  std::string blanked = image.substr(0, 8 + n);
  const std::string key = "\"header_crc32c\":\"";
  ASSERT_NE(blanked.find(key), std::string::npos);
  const std::string stored = blanked.substr(blanked.find(key) + key.size(), 8);
  blanked.replace(blanked.find(key) + key.size(), 8, "00000000");
  EXPECT_EQ(stored, crc_hex(crc32c(blanked)));
  const std::string expected =
      "{\"__metadata__\":{\"C\":\"8\",\"crc32c.fc1.scale\":\"" + crc_of(0, 12) +
      "\",\"crc32c.fc1.state\":\"" + crc_of(40, 58) + "\",\"crc32c.fc1.v\":\"" + crc_of(12, 24) +
      "\",\"crc32c.fc2.scale\":\"" + crc_of(24, 32) + "\",\"crc32c.fc2.state\":\"" +
      crc_of(58, 64) + "\",\"crc32c.fc2.v\":\"" + crc_of(32, 40) +
      "\",\"format_version\":\"2\",\"header_crc32c\":\"" + stored +
      "\",\"note\":\"a \\\"quoted\\\" "
      "note\\n\",\"step\":\"42\"},"
      "\"fc1.scale\":{\"dtype\":\"F32\",\"shape\":[3,1],\"data_offsets\":[0,12]},"
      "\"fc1.v\":{\"dtype\":\"F32\",\"shape\":[3,1],\"data_offsets\":[12,24]},"
      "\"fc2.scale\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[24,32]},"
      "\"fc2.v\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[32,40]},"
      "\"fc1.state\":{\"dtype\":\"U8\",\"shape\":[3,6],\"data_offsets\":[40,58]},"
      "\"fc2.state\":{\"dtype\":\"U8\",\"shape\":[2,3],\"data_offsets\":[58,64]}}";
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1), expected);
  ASSERT_EQ(image.size(), 8 + n + 64);
  // The data bytes: little-endian floats and the packed rows.
  const std::size_t data = 8 + n;
  const auto& fc1 = c.layers[0].state;
  for (std::int64_t o = 0; o < 3; ++o) {
    std::uint32_t bits = 0;
    for (int b = 0; b < 4; ++b) {
      bits |= std::uint32_t(static_cast<unsigned char>(image[data + 4 * o + b])) << (8 * b);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    EXPECT_EQ(f, fc1.scale(o));
    for (int k = 0; k < 6; ++k) {
      EXPECT_EQ(static_cast<unsigned char>(image[data + 40 + 6 * o + k]), fc1.codes(o, k));
    }
  }
}

TEST(Checkpoint, SaveLoadRoundTripAndNoTemporaryLeft) {
  const fs::path dir = temp_dir("roundtrip");
  const std::string path = (dir / "model.safetensors").string();
  Checkpoint c = sample_checkpoint();
  save_checkpoint(path, c);
  c.step = 43;  // overwrite an existing file
  save_checkpoint(path, c);
  const Checkpoint r = read_checkpoint(path);
  EXPECT_EQ(r.C, 8);
  EXPECT_EQ(r.step, 43);
  EXPECT_EQ(r.metadata.at("note"), c.metadata.at("note"));
  ASSERT_EQ(r.layers.size(), 2u);
  EXPECT_TRUE(same_state(r.layer("fc1").state, c.layers[0].state));
  EXPECT_TRUE(same_state(r.layer("fc2").state, c.layers[1].state));
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "model.safetensors");
  }
  EXPECT_EQ(files, 1);
  // Device round trip through save_layers / load_layers.
  const auto dev = create_mirror_and_copy(ExecSpace{}, c.layers[0].state);
  save_layers<MemSpace>(path, {{"only", dev}}, 7, {{"k", "v"}});
  PackedState<MemSpace> target("target", 3, 8, 8);
  const Checkpoint back = load_layers<MemSpace>(path, {{"only", target}});
  EXPECT_EQ(back.step, 7);
  EXPECT_EQ(back.metadata.at("k"), "v");
  EXPECT_TRUE(same_state(create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, target),
                         c.layers[0].state));
  fs::remove_all(dir);
}

TEST(Checkpoint, FailedWriteLeavesNothing) {
  const fs::path dir = temp_dir("failedwrite");
  EXPECT_THROW(save_checkpoint((dir / "missing" / "x.safetensors").string(), sample_checkpoint()),
               CheckpointError);
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

// Every refusal: load_layers throws CheckpointError and the target keeps its contents.
void expect_rejected(const std::string& image, const std::string& what, int target_C = 8) {
  static int counter = 0;
  const fs::path dir = temp_dir("reject");
  const fs::path path = dir / ("bad" + std::to_string(counter++) + ".safetensors");
  write_file(path, image);
  const auto original = sample_state(3, 8, target_C, 99);
  const auto target = create_mirror_and_copy(ExecSpace{}, original);
  try {
    load_layers<MemSpace>(path.string(), {{"fc1", target}});
    ADD_FAILURE() << what << ": accepted";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).size(), 0u);
  }
  EXPECT_TRUE(
      same_state(create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, target), original))
      << what << ": target changed";
  fs::remove_all(dir);
}

TEST(Checkpoint, RejectsEveryTruncationLength) {
  const std::string image = serialize_checkpoint(sample_checkpoint());
  for (std::size_t n = 0; n < image.size(); ++n) {
    EXPECT_THROW(parse_checkpoint(std::string_view(image).substr(0, n)), CheckpointError)
        << "truncated to " << n << " of " << image.size();
  }
  EXPECT_THROW(parse_checkpoint(image + "x"), CheckpointError) << "trailing byte";
  EXPECT_NO_THROW(parse_checkpoint(image));
  expect_rejected(image.substr(0, image.size() - 1), "file truncated by one byte");
}

TEST(Checkpoint, RejectsWrongDtypesShapesAndOffsets) {
  const std::string image = serialize_checkpoint(sample_checkpoint());
  const std::string h = header_of(image);
  const std::string scale = "\"fc1.scale\":{\"dtype\":\"F32\",\"shape\":[3,1]";
  const std::string state = "\"fc1.state\":{\"dtype\":\"U8\",\"shape\":[3,6]";
  const std::pair<std::string, std::string> edits[] = {
      {scale, "\"fc1.scale\":{\"dtype\":\"F16\",\"shape\":[3,1]"},
      {scale, "\"fc1.scale\":{\"dtype\":\"I32\",\"shape\":[3,1]"},
      {scale, "\"fc1.scale\":{\"dtype\":\"F32\",\"shape\":[1,3]"},
      {scale, "\"fc1.scale\":{\"dtype\":\"F32\",\"shape\":[3,1,1]"},
      {scale, "\"fc1.scale\":{\"dtype\":\"F32\",\"shape\":[3]"},
      {state, "\"fc1.state\":{\"dtype\":\"I8\",\"shape\":[3,6]"},
      {state, "\"fc1.state\":{\"dtype\":\"U8\",\"shape\":[6,3]"},
      {state, "\"fc1.state\":{\"dtype\":\"U8\",\"shape\":[2,9]"},
      {"[0,12]", "[0,11]"},
      {"[12,24]", "[13,25]"},
      {"[40,58]", "[41,58]"},
      {"\"fc2.v\"", "\"fc2.w\""},
      {"\"fc2.v\"", "\"fc3.v\""},
      {"\"fc1.state\"", "\"fc1.scale\""},
      {"\"dtype\":\"U8\",", "\"dtype\":\"U8\",\"extra\":1,"},
      {"\"C\":\"8\"", "\"C\":\"12\""},
      {"\"C\":\"8\"", "\"C\":\"x\""},
      {"\"C\":\"8\"", "\"c\":\"8\""},
      {"\"step\":\"42\"", "\"step\":\"-1\""},
      {"\"step\":\"42\"", "\"step\":42"},
      {"\"format_version\":\"2\"", "\"format_version\":\"3\""},
      {"\"format_version\":\"2\"", "\"format_version\":\"1\""},
      {"{\"__metadata__\"", "{\"__metadatb__\""},
  };
  for (const auto& [from, to] : edits) {
    expect_rejected(with_header(image, replace_once(h, from, to)), from + " -> " + to);
  }
  // A C change that keeps the header valid but makes a code invalid (C=2 has 9 codes).
  expect_rejected(with_header(image, replace_once(h, "\"C\":\"8\"", "\"C\":\"2\"")),
                  "codes not valid for C");
  // C mismatch between the file and the caller's state.
  expect_rejected(image, "target C differs", 5);
  // Unknown layer name asked for, and a shape that differs from the caller's.
  Checkpoint other = sample_checkpoint();
  other.layers[0].state = sample_state(4, 8, 8, 1);
  expect_rejected(serialize_checkpoint(other), "target shape differs");
  other.layers[0].name = "fcX";
  expect_rejected(serialize_checkpoint(other), "layer missing");
  // A code byte pattern that is not valid for C=8 (code 63).
  std::string bad_code = image;
  bad_code[8 + read_u64(image, 0) + 40] = char(0xFF);
  expect_rejected(bad_code, "invalid code");
}

TEST(Checkpoint, RejectsHeadersThatDoNotParse) {
  const std::string image = serialize_checkpoint(sample_checkpoint());
  const std::string h = header_of(image);
  for (const std::string& bad :
       {std::string(""), std::string("   "), std::string("[]"), std::string("{"),
        h.substr(0, h.find_last_not_of(' ')), h + "x", replace_once(h, ":", "="),
        replace_once(h, "[3,1]", "[3,1.0]"), replace_once(h, "[3,1]", "[3,-1]"),
        replace_once(h, "[3,1]", "[03,1]"), replace_once(h, "[3,1]", "[3,1,]"),
        replace_once(h, "\"note\"", "\"n\\qte\""), replace_once(h, "\"note\"", "\"n\x01te\""),
        replace_once(h, "\"note\"", "\"n\xC3te\""), replace_once(h, "\"note\"", "\"n\\ud800te\""),
        replace_once(h, "\"note\"", "\"step\""),
        replace_once(h, "\"step\":\"42\"", "\"step\":null"),
        replace_once(h, "[3,1]", "[99999999999999999999,1]")}) {
    expect_rejected(with_header(image, bad), "header '" + bad + "'");
  }
  // Header length prefixes that lie.
  for (const std::uint64_t n :
       {std::uint64_t(0), std::uint64_t(1), std::uint64_t(image.size()), ~std::uint64_t(0)}) {
    std::string lie = image;
    for (int b = 0; b < 8; ++b) lie[b] = char((n >> (8 * b)) & 0xFF);
    expect_rejected(lie, "header length " + std::to_string(n));
  }
}

// A file whose U8 tensor size out * row_bytes wraps modulo 2^64 to the 128 bytes its data offsets
// give: 16777248 * 1099509530628 = 2^64 + 128 (every shape entry is below the 2^40 limit). The
// scale and v tensors are real (4 * out bytes each), so the data offsets cover the buffer
// exactly; the buffer is untouched anonymous memory, so the 134 MB cost no RAM.
TEST(Checkpoint, RejectsTensorSizesThatWrapAround) {
  const std::uint64_t out = 16777248, row_bytes = 1099509530628;
  ASSERT_EQ(out * row_bytes, 128u);  // the wrap this file relies on
  const std::uint64_t f32 = 4 * out;
  std::string header = "{\"__metadata__\":{\"C\":\"8\",\"format_version\":\"1\",\"step\":\"0\"},";
  header += "\"x.scale\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(out) +
            ",1],\"data_offsets\":[0," + std::to_string(f32) + "]},";
  header += "\"x.v\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(out) +
            ",1],\"data_offsets\":[" + std::to_string(f32) + "," + std::to_string(2 * f32) + "]},";
  header += "\"x.state\":{\"dtype\":\"U8\",\"shape\":[" + std::to_string(out) + "," +
            std::to_string(row_bytes) + "],\"data_offsets\":[" + std::to_string(2 * f32) + "," +
            std::to_string(2 * f32 + 128) + "]}}";
  header.append((8 - header.size() % 8) % 8, ' ');
  const std::size_t size = 8 + header.size() + 2 * f32 + 128;
  void* map = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  char* image = static_cast<char*>(map);
  for (int b = 0; b < 8; ++b) image[b] = char((header.size() >> (8 * b)) & 0xFF);
  std::memcpy(image + 8, header.data(), header.size());
  try {
    parse_checkpoint(std::string_view(image, size));
    ADD_FAILURE() << "a wrapped tensor size was accepted";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("x.state"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(row_bytes)), std::string::npos) << e.what();
  }
  ::munmap(map, size);
}

// The header parser's cost is bounded: a header may hold at most max_values JSON values, checked
// before each is stored (so a 100 MiB header of tiny values cannot take many times its size in
// memory, nor hours of duplicate-key comparisons). Many keys under the limit parse, duplicates are
// still found at the end of a long object, and the writer refuses what the reader would.
TEST(Checkpoint, HeaderValueCountIsBoundedAndKeysAreCheckedInLinearTime) {
  constexpr std::size_t limit = checkpoint_max_header_values;
  const std::string image = serialize_checkpoint(sample_checkpoint());
  const std::string h = header_of(image);
  const auto with_keys = [&](std::size_t count, const std::string& last) {
    std::string entries;
    entries.reserve(count * 16);
    for (std::size_t k = 0; k < count; ++k) entries += "\"k" + std::to_string(k) + "\":\"\",";
    return with_header(
        image, replace_once(h, "{\"__metadata__\":{", "{\"__metadata__\":{" + entries + last));
  };
  // The sample header holds 61 values (2 objects, 11 metadata entries: 4, a checksum per tensor
  // and the header's, 6 tensors of 8): fill up to the limit exactly.
  const std::size_t sample_values = 2 + 11 + 3 * 8 * 2;
  const Checkpoint full = parse_checkpoint(with_keys(limit - sample_values, ""));
  EXPECT_EQ(full.metadata.size(), limit - sample_values + 1);  // + the sample's "note"
  try {
    parse_checkpoint(with_keys(limit - sample_values + 1, ""));
    ADD_FAILURE() << "a header of " << limit + 1 << " values was accepted";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(limit)), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_checkpoint(with_keys(100000, "\"k0\":\"\",")), CheckpointError);

  Checkpoint too_many = sample_checkpoint();
  for (std::size_t k = 0; k < limit; ++k) too_many.metadata["k" + std::to_string(k)] = "";
  EXPECT_THROW(serialize_checkpoint(too_many), std::invalid_argument);
  Checkpoint largest = sample_checkpoint();
  for (std::size_t k = 0; k + sample_values < limit; ++k) {
    largest.metadata["k" + std::to_string(k)] = "";
  }
  EXPECT_EQ(parse_checkpoint(serialize_checkpoint(largest)).metadata.size(),
            largest.metadata.size());
}

// What a hostile header costs is bounded by the limits, not by its size: each of these headers is
// close to the 100 MiB limit (or past it) and is refused with a CheckpointError that names the
// limit and where it was reached, after reading only the bytes up to that point.
std::string image_with_raw_header(const std::string& header) {
  std::string image(8, '\0');
  for (int b = 0; b < 8; ++b) image[b] = char((header.size() >> (8 * b)) & 0xFF);
  return image + header;
}

void expect_refused_quickly(const std::string& image, const std::vector<std::string>& parts) {
  const auto start = std::chrono::steady_clock::now();
  try {
    parse_checkpoint(image);
    ADD_FAILURE() << "accepted";
  } catch (const CheckpointError& e) {
    for (const std::string& part : parts) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  }  // anything else (std::bad_alloc included) escapes and fails the test
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10.0) << "refusing a " << image.size() << "-byte header";
}

TEST(Checkpoint, HeaderWithTooManyKeysIsRefusedQuickly) {
  // 12 bytes per key, 96 MiB: 32x the value limit.
  const std::string header = metadata_header_with_keys(std::size_t(8) << 20);
  ASSERT_LT(header.size(), checkpoint_max_header_bytes);
  // The value past the limit is the one of key number limit - 2 (the document and the metadata
  // object come first): the lexer knows its 0 has ended when it reads the ',' after it, at byte
  // 17 + 12 * (limit - 2) + 11.
  const std::size_t at = 17 + 12 * (checkpoint_max_header_values - 2) + 11;
  expect_refused_quickly(image_with_raw_header(header),
                         {"more than " + std::to_string(checkpoint_max_header_values) + " values",
                          "at byte " + std::to_string(at)});
}

TEST(Checkpoint, HeaderNestedTooDeepIsRefusedQuickly) {
  // The metadata value opens 90 Mi arrays; the ninth one (at byte 16 + 8) is one level too deep.
  std::string header = "{\"__metadata__\":";
  header.append(std::size_t(90) << 20, '[');
  expect_refused_quickly(
      image_with_raw_header(header),
      {"nesting deeper than " + std::to_string(checkpoint_max_header_depth), "at byte 24"});
  // The limit itself is allowed: a value at depth 8 is read (and then refused as metadata).
  // (the document 0, metadata 1, six arrays 2-7, the string 8).
  std::string deepest =
      "{\"__metadata__\":{\"k\":" + std::string(6, '[') + "\"\"" + std::string(6, ']') + "}}";
  try {
    parse_checkpoint(image_with_raw_header(deepest));
    ADD_FAILURE() << "accepted";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("metadata \"k\" is not a string"), std::string::npos)
        << e.what();
  }
}

TEST(Checkpoint, HeaderLargerThanTheLimitIsRefusedBeforeReading) {
  // The whole header is there (anonymous memory, never touched: it costs no RAM), one byte over.
  const std::uint64_t n = checkpoint_max_header_bytes + 1;
  const std::size_t size = 8 + n;
  void* map = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  char* image = static_cast<char*>(map);
  for (int b = 0; b < 8; ++b) image[b] = char((n >> (8 * b)) & 0xFF);
  const auto start = std::chrono::steady_clock::now();
  try {
    parse_checkpoint(std::string_view(image, size));
    ADD_FAILURE() << "accepted";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the limit of " +
                                         std::to_string(checkpoint_max_header_bytes) + " bytes"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  ::munmap(map, size);
}

// A flip is accepted only inside a JSON string (a layer name, the note, a metadata digit), and an
// accepted file holds the original tensors, whatever its layers are now called.
TEST(Checkpoint, RandomHeaderByteFlipsNeverCrashAndRejectionsChangeNothing) {
  const std::string image = serialize_checkpoint(sample_checkpoint());
  const Checkpoint original = sample_checkpoint();
  const std::size_t n = read_u64(image, 0);
  // in_string[k]: header byte k lies between a string's quotes (escapes included).
  std::vector<bool> in_string(n, false);
  for (std::size_t k = 0, quoted = 0, escaped = 0; k < n; ++k) {
    const char ch = image[8 + k];
    if (!quoted) {
      quoted = ch == '"';
    } else if (escaped) {
      escaped = 0;
      in_string[k] = true;
    } else if (ch == '"') {
      quoted = 0;
    } else {
      escaped = ch == '\\';
      in_string[k] = true;
    }
  }
  const auto same_tensors = [](const PackedState<Kokkos::HostSpace>& a,
                               const PackedState<Kokkos::HostSpace>& b) {
    if (a.out() != b.out() || a.in() != b.in()) return false;
    return std::memcmp(a.codes.data(), b.codes.data(), a.codes.span()) == 0 &&
           std::memcmp(a.scale.data(), b.scale.data(), 4 * a.scale.span()) == 0 &&
           std::memcmp(a.v.data(), b.v.data(), 4 * a.v.span()) == 0;
  };
  int rejected = 0, accepted = 0;
  for (std::uint32_t trial = 0; trial < 1000; ++trial) {
    std::string flipped = image;
    const std::uint32_t h = hash_u32(trial * 2654435761u + 1);
    const std::size_t at = 8 + h % n;
    const unsigned char mask = static_cast<unsigned char>(1u << ((h >> 16) % 8));
    flipped[at] = char(static_cast<unsigned char>(flipped[at]) ^ mask);
    Checkpoint c;
    try {
      c = parse_checkpoint(flipped);
    } catch (const CheckpointError&) {
      ++rejected;
      continue;
    }
    ++accepted;
    SCOPED_TRACE("flip of bit " + std::to_string(mask) + " at byte " + std::to_string(at));
    EXPECT_TRUE(in_string[at - 8]) << "a flip outside every JSON string was accepted";
    ASSERT_EQ(c.layers.size(), original.layers.size());
    for (const CheckpointLayer& l : c.layers) {
      const bool found =
          std::any_of(original.layers.begin(), original.layers.end(),
                      [&](const CheckpointLayer& o) { return same_tensors(l.state, o.state); });
      EXPECT_TRUE(found) << "layer \"" << l.name << "\" holds data the file did not";
    }
  }
  EXPECT_GT(rejected, 800) << accepted << " flips were accepted";
  std::cout << "[ " << rejected << " flips rejected, " << accepted << " accepted ]\n";
  for (std::uint32_t trial = 0; trial < 20; ++trial) {
    std::string flipped = image;
    const std::size_t at = 8 + hash_u32(trial + 77) % 17;  // "{"__metadata__":{" : always fatal
    flipped[at] = char(static_cast<unsigned char>(flipped[at]) ^ 0x20);
    expect_rejected(flipped, "flip at " + std::to_string(at));
  }
}

TEST(Checkpoint, Crc32cKnownAnswers) {
  EXPECT_EQ(crc32c(std::string_view("")), 0u);
  EXPECT_EQ(crc32c(std::string_view("123456789")), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(crc32c(std::string_view("56789"), crc32c(std::string_view("1234"))), 0xE3069283u);
}

// One small layer: every single-bit flip anywhere in the file (length, header, padding, every
// tensor) is refused, whatever it hits.
TEST(Checkpoint, EverySingleBitFlipIsRejected) {
  Checkpoint c;
  c.C = 8;
  c.step = 256;
  c.metadata["batch"] = "256";
  c.layers.push_back({"l", sample_state(2, 8, 8, 3)});
  const std::string image = serialize_checkpoint(c);
  ASSERT_NO_THROW(parse_checkpoint(image));
  std::size_t accepted = 0;
  for (std::size_t at = 0; at < image.size(); ++at) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string flipped = image;
      flipped[at] = char(static_cast<unsigned char>(flipped[at]) ^ (1u << bit));
      try {
        parse_checkpoint(flipped);
        ++accepted;
        ADD_FAILURE() << "flip of bit " << bit << " at byte " << at << " of " << image.size()
                      << " was accepted";
      } catch (const CheckpointError&) {
      }
    }
  }
  EXPECT_EQ(accepted, 0u);
}

// Bytes `at` of tensor `key` replaced, with its checksum and the header's made to match: what
// is left to refuse it is the check of the values.
std::string with_tensor_bytes(const std::string& image, const std::string& key, std::size_t at,
                              const std::string& bytes) {
  const std::size_t data = 8 + read_u64(image, 0);
  std::string header = header_of(image);
  const std::size_t offsets = header.find("\"data_offsets\":[", header.find("\"" + key + "\":{"));
  const std::size_t first = std::stoull(header.substr(offsets + 16));
  const std::size_t stop = std::stoull(header.substr(header.find(',', offsets + 16) + 1));
  std::string out = image;
  out.replace(data + first + at, bytes.size(), bytes);
  const std::string entry = "\"crc32c." + key + "\":\"";
  header.replace(header.find(entry) + entry.size(), 8,
                 crc_hex(crc32c(out.data() + data + first, stop - first)));
  return with_header(out, header);
}

std::string f32_bytes(float f) {
  std::string b(4, '\0');
  std::memcpy(b.data(), &f, 4);
  return b;
}

TEST(Checkpoint, RejectsValuesNoUpdateProduces) {
  Checkpoint c;
  c.C = 8;
  c.layers.push_back({"l", sample_state(2, 8, 8, 3)});
  const std::string image = serialize_checkpoint(c);
  ASSERT_NO_THROW(parse_checkpoint(with_tensor_bytes(image, "l.scale", 0, f32_bytes(0.5f))));
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const float bad : {nan, inf, -inf, 0.0f, -1.0f, 9.9e-6f, 10.001f}) {
    EXPECT_THROW(parse_checkpoint(with_tensor_bytes(image, "l.scale", 4, f32_bytes(bad))),
                 CheckpointError)
        << "scale " << bad;
    Checkpoint bad_scale = c;
    bad_scale.layers[0].state = sample_state(2, 8, 8, 3);
    bad_scale.layers[0].state.scale(1) = bad;
    EXPECT_THROW(serialize_checkpoint(bad_scale), std::invalid_argument) << "scale " << bad;
  }
  for (const float bad : {nan, inf, -inf, -1e-30f}) {
    EXPECT_THROW(parse_checkpoint(with_tensor_bytes(image, "l.v", 0, f32_bytes(bad))),
                 CheckpointError)
        << "v " << bad;
    Checkpoint bad_v = c;
    bad_v.layers[0].state = sample_state(2, 8, 8, 3);
    bad_v.layers[0].state.v(0) = bad;
    EXPECT_THROW(serialize_checkpoint(bad_v), std::invalid_argument) << "v " << bad;
  }
  EXPECT_NO_THROW(parse_checkpoint(with_tensor_bytes(image, "l.v", 0, f32_bytes(0.0f))));
  EXPECT_NO_THROW(parse_checkpoint(with_tensor_bytes(image, "l.scale", 0, f32_bytes(10.0f))));
  EXPECT_NO_THROW(parse_checkpoint(with_tensor_bytes(image, "l.scale", 0, f32_bytes(1e-5f))));
}

// A format 1 file (no checksums, as written before they were added) still loads.
TEST(Checkpoint, FormatOneWithoutChecksumsLoads) {
  std::string header =
      "{\"__metadata__\":{\"C\":\"8\",\"format_version\":\"1\",\"step\":\"5\"},"
      "\"l.scale\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[0,4]},"
      "\"l.v\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[4,8]},"
      "\"l.state\":{\"dtype\":\"U8\",\"shape\":[1,3],\"data_offsets\":[8,11]}}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string image(8, '\0');
  for (int b = 0; b < 8; ++b) image[b] = char((header.size() >> (8 * b)) & 0xFF);
  image += header + f32_bytes(0.5f) + f32_bytes(0.25f) + std::string(3, '\0');
  const Checkpoint c = parse_checkpoint(image);
  EXPECT_EQ(c.step, 5);
  EXPECT_EQ(c.layer("l").state.scale(0), 0.5f);
  // Its values are still checked.
  EXPECT_THROW(parse_checkpoint(image.substr(0, image.size() - 11) + f32_bytes(-1.0f) +
                                f32_bytes(0.25f) + std::string(3, '\0')),
               CheckpointError);
  // Checksum entries are reserved for the writer.
  Checkpoint reserved;
  reserved.metadata["crc32c.x"] = "00000000";
  EXPECT_THROW(serialize_checkpoint(reserved), std::invalid_argument);
  reserved.metadata = {{"header_crc32c", "00000000"}};
  EXPECT_THROW(serialize_checkpoint(reserved), std::invalid_argument);
}

TEST(Checkpoint, SpecialFilesAreNeitherReadNorReplaced) {
  const fs::path dir = temp_dir("special");
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Refused at once (opening it for reading would wait for a writer forever).
  EXPECT_THROW(read_checkpoint(fifo.string()), CheckpointError);
  EXPECT_THROW(read_checkpoint(dir.string()), CheckpointError);
  EXPECT_THROW(read_checkpoint("/dev/zero"), CheckpointError);
  EXPECT_THROW(save_checkpoint(fifo.string(), sample_checkpoint()), CheckpointError);
  EXPECT_TRUE(fs::is_fifo(fifo));
  // A symbolic link (to a regular file too) is not replaced, nor written through.
  const fs::path target = dir / "target";
  write_file(target, "keep");
  const fs::path link = dir / "link";
  fs::create_symlink(target, link);
  EXPECT_THROW(save_checkpoint(link.string(), sample_checkpoint()), CheckpointError);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::file_size(target), 4u);
  EXPECT_THROW(save_checkpoint("", sample_checkpoint()), CheckpointError);
  // A file whose size differs from what its header describes is refused before its data is
  // read.
  const std::string image = serialize_checkpoint(sample_checkpoint());
  write_file(dir / "long", image + std::string(1 << 20, '\0'));
  EXPECT_THROW(read_checkpoint((dir / "long").string()), CheckpointError);
  fs::remove_all(dir);
}

TEST(Checkpoint, StaleTemporariesOfAnInterruptedSaveAreRemoved) {
  const fs::path dir = temp_dir("stale");
  const fs::path path = dir / "model.safetensors";
  write_file(dir / "model.safetensors.tmp-a1B2c3", "partial");
  write_file(dir / "other.safetensors.tmp-a1B2c3", "another file's");
  save_checkpoint(path.string(), sample_checkpoint());
  EXPECT_FALSE(fs::exists(dir / "model.safetensors.tmp-a1B2c3"));
  EXPECT_TRUE(fs::exists(dir / "other.safetensors.tmp-a1B2c3"));
  EXPECT_NO_THROW(read_checkpoint(path.string()));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace TernaryCounter::Test
