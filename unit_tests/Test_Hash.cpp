// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// SPEC §2: the hash and the rounding thresholds against conformance/hash_u32.txt, on the host
// and inside a kernel on ExecSpace (the device compiler must give the same bits).
#include "Test_Helpers.hpp"

#include <fstream>

namespace TernaryCounter::Test {

struct HashLine {
  char kind;           // 'h': H(x) = value; 'u': bits of uniform01(seed, elem) = value
  std::uint32_t a, b;  // h: x, unused; u: seed, elem
  std::uint32_t value;
  int line;
};

inline std::vector<HashLine> read_hash_file() {
  const fs::path file = test_data_dir() / "hash_u32.txt";
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot open " + file.string());
  std::vector<HashLine> lines;
  std::string text;
  for (int n = 1; std::getline(in, text); ++n) {
    if (text.empty() || text[0] == '#') continue;
    std::istringstream s(text);
    std::string kind;
    unsigned long long a = 0, b = 0, value = 0;
    s >> kind;
    if (kind == "h") {
      s >> a >> value;
    } else if (kind == "u") {
      s >> a >> b >> std::hex >> value;
    }
    if (!s || (kind != "h" && kind != "u")) {
      throw std::runtime_error(file.string() + ":" + std::to_string(n) + ": bad line '" + text +
                               "'");
    }
    lines.push_back({kind[0], std::uint32_t(a), std::uint32_t(b), std::uint32_t(value), n});
  }
  return lines;
}

// Evaluates every line's function on ExecSpace (a free function: nvcc does not allow extended
// lambdas in the private TestBody of a TEST).
inline std::vector<std::uint32_t> evaluate_on_exec_space(const std::vector<HashLine>& lines) {
  const std::int64_t n = std::int64_t(lines.size());
  Kokkos::View<std::uint32_t* [3], Kokkos::HostSpace> args("TernaryCounter::test::hash_args", n);
  for (std::int64_t j = 0; j < n; ++j) {
    args(j, 0) = lines[j].kind == 'h' ? 0u : 1u;
    args(j, 1) = lines[j].a;
    args(j, 2) = lines[j].b;
  }
  const auto d_args = Kokkos::create_mirror_view_and_copy(MemSpace{}, args);
  Kokkos::View<std::uint32_t*, MemSpace> d_result("TernaryCounter::test::hash_result", n);
  Kokkos::parallel_for(
      "TernaryCounter::test::hash", Kokkos::RangePolicy<ExecSpace>(0, n), KOKKOS_LAMBDA(int j) {
        d_result(j) = d_args(j, 0) == 0u
                          ? hash_u32(d_args(j, 1))
                          : Kokkos::bit_cast<std::uint32_t>(uniform01(d_args(j, 1), d_args(j, 2)));
      });
  const auto result = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, d_result);
  return std::vector<std::uint32_t>(result.data(), result.data() + n);
}

namespace {

TEST(Hash, EveryLineOfHashFileOnHost) {
  const auto lines = read_hash_file();
  int h = 0, u = 0;
  for (const HashLine& l : lines) {
    if (l.kind == 'h') {
      ++h;
      EXPECT_EQ(hash_u32(l.a), l.value) << "hash_u32.txt line " << l.line << ": H(" << l.a << ")";
    } else {
      ++u;
      const float t = uniform01(l.a, l.b);
      EXPECT_EQ(bits(t), l.value) << "hash_u32.txt line " << l.line << ": u(seed=" << l.a
                                  << ", elem=" << l.b << ") = " << t;
      EXPECT_GE(t, 0.0f);
      EXPECT_LT(t, 1.0f);
    }
  }
  // Guards against a truncated or misparsed file silently testing nothing.
  EXPECT_GT(h, 50);
  EXPECT_GT(u, 30);
}

TEST(Hash, EveryLineOfHashFileOnExecSpace) {
  const auto lines = read_hash_file();
  const auto got = evaluate_on_exec_space(lines);
  for (std::size_t j = 0; j < lines.size(); ++j) {
    EXPECT_EQ(got[j], lines[j].value) << "hash_u32.txt line " << lines[j].line;
  }
}

TEST(Hash, ElementIndexWrapsModulo2To32) {
  EXPECT_EQ(element_index(0, 100, 7), 7u);
  EXPECT_EQ(element_index(3, 100, 7), 307u);
  // (2^20 * 2^12 + 5) mod 2^32 = 5: the product is formed in 64 bits, then truncated.
  EXPECT_EQ(element_index(std::int64_t(1) << 20, std::int64_t(1) << 12, 5), 5u);
  EXPECT_EQ(element_index(std::int64_t(5000000), 1028, 1027),
            std::uint32_t((std::uint64_t(5000000) * 1028 + 1027) & 0xFFFFFFFFull));
}

}  // namespace
}  // namespace TernaryCounter::Test
