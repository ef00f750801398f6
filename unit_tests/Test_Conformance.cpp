// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// SPEC §4: every conformance case run on ExecSpace is bit-exact to its spec_* files and within
// the stated tolerance of the reference package's files. One test instance per case.
#include "Test_Helpers.hpp"

#include <fstream>
#include <iterator>

namespace TernaryCounter::Test {
namespace {

class ConformanceCase : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { TERNARYCOUNTER_SKIP_IF_CASE_ABSENT(GetParam()); }
  fs::path dir() const { return case_dir(GetParam()); }
};

TEST_P(ConformanceCase, BitExactToSpecFiles) {
  const Case c = Conformance::read_case(dir());
  const Result want = Conformance::read_result(dir(), c, "spec_");
  ASSERT_TRUE(fs::exists(dir() / "spec_skipped.txt"));
  EXPECT_TRUE(bit_exact(run_case(c), want));
}

TEST_P(ConformanceCase, HostReferenceBitExactToSpecFiles) {
  // The oracle the other tests trust must itself meet the contract.
  const Case c = Conformance::read_case(dir());
  EXPECT_TRUE(bit_exact(run_reference(c), Conformance::read_result(dir(), c, "spec_")));
}

TEST_P(ConformanceCase, WithinToleranceOfReferencePackage) {
  if (!Conformance::has_reference_result(dir())) {
    GTEST_SKIP() << GetParam() << " has no reference-package result (a spec-only case)";
  }
  const Case c = Conformance::read_case(dir());
  const Result ref = Conformance::read_result(dir(), c, "");
  const Result got = run_case(c);
  EXPECT_EQ(got.skipped, 0);
  EXPECT_TRUE(within_reference_tolerance(got, ref, c));
}

TEST_P(ConformanceCase, PackedInputEqualsStateInFile) {
  // state_in.u8 was packed by the reference package: our packing must give the same bytes.
  const Case c = Conformance::read_case(dir());
  std::ifstream f(dir() / "state_in.u8", std::ios::binary);
  ASSERT_TRUE(f) << "missing state_in.u8";
  const std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                                std::istreambuf_iterator<char>());
  const HostState state = c.state();
  ASSERT_EQ(std::int64_t(bytes.size()), c.out * c.in / 4 * 3);
  for (std::int64_t o = 0; o < c.out; ++o) {
    for (std::int64_t j = 0; j < c.in / 4 * 3; ++j) {
      ASSERT_EQ(state.codes(o, j), std::uint8_t(bytes[o * (c.in / 4 * 3) + j]))
          << "row " << o << " byte " << j;
    }
  }
}

// The tolerance's "one counter step" (SPEC §4): the codes step 10 gives for rounded counters cc and
// cc + 1 from the same old code; checked here so the conformance tolerance means what it says.
TEST(ReferenceTolerance, OneCounterStepDefinition) {
  const int C = 8;
  const auto k = [&](int t, int c) { return encode(t, c, C); };
  // Same ternary, counters one apart.
  EXPECT_TRUE(one_counter_step_apart(k(0, 3), k(0, 6), k(0, 7), C));
  EXPECT_TRUE(one_counter_step_apart(k(-1, 0), k(-1, -2), k(-1, -1), C));
  // Carry boundaries: (t, C-1) vs (t+1, 0) and (t, -(C-1)) vs (t-1, 0).
  EXPECT_TRUE(one_counter_step_apart(k(0, 0), k(0, 7), k(1, 0), C));
  EXPECT_TRUE(one_counter_step_apart(k(0, 0), k(0, -7), k(-1, 0), C));
  EXPECT_TRUE(one_counter_step_apart(k(1, 0), k(1, -7), k(0, 0), C));
  // A blocked flip pins the counter: (1, C-2) vs (1, C-1) is one step from t = 1.
  EXPECT_TRUE(one_counter_step_apart(k(1, 5), k(1, 6), k(1, 7), C));
  // Two counter steps, a double flip, a sign change, and a pair no rounding of an old t = 1
  // reaches ((0, 7) needs a carry of -1 with a positive remainder).
  EXPECT_FALSE(one_counter_step_apart(k(0, 0), k(0, 5), k(0, 7), C));
  EXPECT_FALSE(one_counter_step_apart(k(0, 0), k(1, 0), k(-1, 0), C));
  EXPECT_FALSE(one_counter_step_apart(k(0, 0), k(0, 1), k(0, -1), C));
  EXPECT_FALSE(one_counter_step_apart(k(1, 0), k(0, 7), k(1, 0), C));
}

INSTANTIATE_TEST_SUITE_P(Small, ConformanceCase, ::testing::ValuesIn(small_case_names()),
                         CaseName{});
INSTANTIATE_TEST_SUITE_P(Large, ConformanceCase, ::testing::ValuesIn(large_case_names()),
                         CaseName{});

}  // namespace
}  // namespace TernaryCounter::Test
