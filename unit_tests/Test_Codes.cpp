#include "Test_Common.hpp"

namespace TernaryCounter::Test {
namespace {

TEST(Codes, EncodeDecodeRoundTripForEveryDepthAndCode) {
  for (int C = min_counter_depth; C <= max_counter_depth; ++C) {
    for (int k = 0; k < code_count(C); ++k) {
      const int t = decode_ternary(k, C), c = decode_counter(k, C);
      ASSERT_GE(t, -1);
      ASSERT_LE(t, 1);
      ASSERT_LE(std::abs(c), C - 1);
      ASSERT_EQ(encode(t, c, C), k) << "C=" << C;
    }
  }
}

}  // namespace
}  // namespace TernaryCounter::Test
