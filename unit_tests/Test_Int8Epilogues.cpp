// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// engines/TernaryCounter_Int8Epilogues.hpp: each epilogue turns an int32 sum into SPEC §6's
// float, bit for bit, in its element store (every backend) and its run store (host engines);
// the products' outputs carry the one NaN 0x7FC00000 whatever NaN the arithmetic makes.
#include "Test_Helpers.hpp"

#include "engines/TernaryCounter_Int8Epilogues.hpp"

#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

namespace TernaryCounter::Test {
namespace Int8EpiloguesTest {

constexpr std::int64_t rows = 5, cols = 11;

/// Sums over the int32 range, with a zero; scales with a NaN of another sign and payload, an
/// infinity and a zero among them.
struct Inputs {
  std::vector<std::int32_t> sums;
  std::vector<float> row_scale, col_scale;
  explicit Inputs(std::uint64_t seed) : sums(rows * cols), row_scale(rows), col_scale(cols) {
    SplitMix64 rng(seed);
    for (auto& s : sums) s = std::int32_t(std::uint32_t(rng.next()));
    sums[3] = 0;
    for (float& s : row_scale) s = rng.uniform(1e-6f, 1e-2f);
    for (float& s : col_scale) s = rng.uniform(1e-6f, 1e-2f);
    row_scale[1] = std::bit_cast<float>(0xFFC00001u);
    col_scale[2] = std::numeric_limits<float>::infinity();
    col_scale[4] = 0.0f;
  }
};

template <class Mem>
Kokkos::View<float*, Mem> vector_to(const std::vector<float>& v) {
  Kokkos::View<float*, Mem> d("TernaryCounter::test::vector", v.size());
  Kokkos::deep_copy(
      d, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
             v.data(), v.size()));
  return d;
}

/// out(r, c) through epilogue.store on ExecSpace.
template <class Epilogue>
void store_all(const Epilogue& epilogue, const std::vector<std::int32_t>& sums_h) {
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, MemSpace> sums("sums", rows, cols);
  Kokkos::deep_copy(
      sums, Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, Kokkos::HostSpace,
                         Kokkos::MemoryTraits<Kokkos::Unmanaged>>(sums_h.data(), rows, cols));
  Kokkos::parallel_for(
      "TernaryCounter::test::epilogue",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>({0, 0}, {rows, cols}),
      KOKKOS_LAMBDA(std::int64_t r, std::int64_t c) { epilogue.store(r, c, sums(r, c)); });
  Kokkos::fence();
}

/// The same through epilogue.store_run, a run of a row at a time (hosts).
template <class Epilogue>
void store_runs(const Epilogue& epilogue, const std::vector<std::int32_t>& sums) {
  for (std::int64_t r = 0; r < rows; ++r) {
    epilogue.store_run(r, 0, 4, &sums[r * cols]);
    epilogue.store_run(r, 4, int(cols - 4), &sums[r * cols + 4]);
  }
}

std::uint32_t canonical_bits(float v) {
  return v != v ? 0x7FC00000u : bits(v);
}

TEST(Int8Epilogues, ForwardIsSampleScaleThenRowScaleWithOneNaN) {
  const Inputs in(41);
  const OutputView<MemSpace> y("y", rows, cols);
  const Impl::ForwardEpilogue<MemSpace> epilogue{y, vector_to<MemSpace>(in.row_scale),
                                                 vector_to<MemSpace>(in.col_scale)};
  store_all(epilogue, in.sums);
  const auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, y);
  int nans = 0;
  for (std::int64_t m = 0; m < rows; ++m) {
    for (std::int64_t o = 0; o < cols; ++o) {
      const float want = (float(in.sums[m * cols + o]) * in.row_scale[m]) * in.col_scale[o];
      nans += want != want;
      ASSERT_EQ(bits(got(m, o)), canonical_bits(want)) << "m " << m << " o " << o;
    }
  }
  EXPECT_GT(nans, 0);  // the NaN rule is exercised
  if constexpr (std::is_same_v<MemSpace, Kokkos::HostSpace>) {
    const OutputView<MemSpace> y2("y2", rows, cols);
    store_runs(Impl::ForwardEpilogue<MemSpace>{y2, epilogue.sample_scale, epilogue.row_scale},
               in.sums);
    for (std::int64_t j = 0; j < rows * cols; ++j) {
      ASSERT_EQ(bits(y2.data()[j]), bits(got.data()[j])) << "element " << j;
    }
  }
}

TEST(Int8Epilogues, BackwardInputIsSampleScaleWithOneNaN) {
  const Inputs in(42);
  const OutputView<MemSpace> grad_x("grad_x", rows, cols);
  const Impl::BackwardInputEpilogue<MemSpace> epilogue{grad_x, vector_to<MemSpace>(in.row_scale)};
  store_all(epilogue, in.sums);
  const auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, grad_x);
  for (std::int64_t m = 0; m < rows; ++m) {
    for (std::int64_t i = 0; i < cols; ++i) {
      const float want = float(in.sums[m * cols + i]) * in.row_scale[m];
      ASSERT_EQ(bits(got(m, i)), canonical_bits(want)) << "m " << m << " i " << i;
    }
  }
  if constexpr (std::is_same_v<MemSpace, Kokkos::HostSpace>) {
    const OutputView<MemSpace> g2("g2", rows, cols);
    store_runs(Impl::BackwardInputEpilogue<MemSpace>{g2, epilogue.sample_scale}, in.sums);
    for (std::int64_t j = 0; j < rows * cols; ++j) {
      ASSERT_EQ(bits(g2.data()[j]), bits(got.data()[j])) << "element " << j;
    }
  }
}

TEST(Int8Epilogues, GradientIsSumTimesTheProductOfTheScales) {
  const Inputs in(43);
  const OutputView<MemSpace> gradient("gradient", rows, cols);
  const Impl::GradientEpilogue<MemSpace> epilogue{gradient, vector_to<MemSpace>(in.row_scale),
                                                  vector_to<MemSpace>(in.col_scale)};
  store_all(epilogue, in.sums);
  const auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, gradient);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t i = 0; i < cols; ++i) {
      const float want = float(in.sums[r * cols + i]) * (in.row_scale[r] * in.col_scale[i]);
      // A non-finite gradient row is skipped by the row update whatever its NaN's bits.
      if (want != want) {
        ASSERT_NE(got(r, i), got(r, i)) << "r " << r << " i " << i;
      } else {
        ASSERT_EQ(bits(got(r, i)), bits(want)) << "r " << r << " i " << i;
      }
    }
  }
  if constexpr (std::is_same_v<MemSpace, Kokkos::HostSpace>) {
    const OutputView<MemSpace> g2("g2", rows, cols);
    store_runs(Impl::GradientEpilogue<MemSpace>{g2, epilogue.row_scale, epilogue.col_scale},
               in.sums);
    for (std::int64_t j = 0; j < rows * cols; ++j) {
      ASSERT_EQ(bits(g2.data()[j]), bits(got.data()[j])) << "element " << j;
    }
  }
}

}  // namespace Int8EpiloguesTest
}  // namespace TernaryCounter::Test
