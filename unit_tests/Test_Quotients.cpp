// SPEC §3 step 9 divides each gradient by its row's denominator; the GPU row update multiplies by
// the row's reciprocal and corrects once (RowMath::reciprocal_quotient). Powers of two scale
// every step of it exactly, so inside RowMath::in_reciprocal_range it is the division's result
// iff it is for the two mantissas: checked here against the division for every gradient mantissa
// and a spread of denominator mantissas, or all 2^46 pairs with TERNARYCOUNTER_QUOTIENTS=all
// (about a minute on an H200).
#include "Test_Helpers.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace TernaryCounter::Test {
namespace {

constexpr std::uint32_t one_bits = 0x3F800000u;  // 1.0f
constexpr std::int64_t mantissas = std::int64_t(1) << 23;

/// Pairs (g, d) in [1, 2)^2 where reciprocal_quotient differs from g / d, over every g and the
/// `count` denominators 1 + (first + stride j) ulps.
std::int64_t quotient_mismatches(std::int64_t first, std::int64_t stride, std::int64_t count) {
  std::int64_t bad = 0;
  Kokkos::parallel_reduce(
      "TernaryCounter::test::quotients",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>, Kokkos::IndexType<std::int64_t>>(
          {0, 0}, {count, mantissas}),
      KOKKOS_LAMBDA(std::int64_t j, std::int64_t i, std::int64_t & n) {
        const float d = Kokkos::bit_cast<float>(one_bits + std::uint32_t(first + stride * j));
        const float g = Kokkos::bit_cast<float>(one_bits + std::uint32_t(i));
        const float got = RowMath::reciprocal_quotient(g, d, 1.0f / d);
        n += Kokkos::bit_cast<std::uint32_t>(got) != Kokkos::bit_cast<std::uint32_t>(g / d);
      },
      bad);
  return bad;
}

TEST(Quotients, ReciprocalQuotientIsTheDivisionForEveryMantissaPair) {
  const char* all = std::getenv("TERNARYCOUNTER_QUOTIENTS");
  const bool host = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
  std::int64_t first = 0, stride = 1, count = mantissas;
  if (!(all && std::string(all) == "all")) {
    // Both ends of the binade and an even spread between them.
    count = host ? 16 : 1024;
    stride = (mantissas - 1) / (count - 1);
  }
  const std::int64_t bad = quotient_mismatches(first, stride, count);
  EXPECT_EQ(bad, 0);
  std::cout << "[ " << count << " x " << mantissas << " mantissa pairs on " << ExecSpace::name()
            << ": " << bad << " differ from the division ]\n";
}

TEST(Quotients, RangeOfTheReciprocalPath) {
  for (const float x : {0x1p-60f, -0x1p-60f, 1.0f, 0x1p60f, -0x1p60f}) {
    EXPECT_TRUE(RowMath::in_reciprocal_range(x)) << x;
  }
  for (const float x : {0.0f, -0.0f, 1e-40f, 0x1.fffffep-61f, 0x1.000002p60f,
                        std::numeric_limits<float>::infinity(), std::nanf("")}) {
    EXPECT_FALSE(RowMath::in_reciprocal_range(x)) << x;
  }
}

}  // namespace
}  // namespace TernaryCounter::Test
