// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// engines/TernaryCounter_RowQuantizer.hpp against the host-loop reference, bit for bit:
// forward's nearest rounding of x and backward_input's stochastic rounding of grad_out * scale,
// with zero, non-finite and empty rows, the padding, (hosts) the AVX-512 and scalar copies, and
// the GPUs' kernel of rows by vector lanes on every backend.
#include "Test_Helpers.hpp"

#include "IntegerReference.hpp"
#include "engines/TernaryCounter_HostIsa.hpp"
#include "engines/TernaryCounter_Quantize.hpp"
#include "engines/TernaryCounter_QuantizedRows.hpp"
#include "engines/TernaryCounter_RowQuantizer.hpp"
#include "engines/TernaryCounter_ScratchArena.hpp"

#include <limits>
#include <string>
#include <vector>

namespace TernaryCounter::Test {
namespace RowQuantizerTest {

/// Rows [R, K] with a zero row (1) and a row holding an infinity (2) where R allows it.
std::vector<float> rows_with_special_values(std::int64_t R, std::int64_t K, SplitMix64& rng) {
  std::vector<float> v(R * K);
  for (float& e : v) e = rng.uniform(-3.0f, 3.0f);
  if (R > 1) {
    for (std::int64_t k = 0; k < K; ++k) v[1 * K + k] = 0.0f;
  }
  if (R > 2 && K > 0) v[2 * K + K / 2] = std::numeric_limits<float>::infinity();
  return v;
}

struct Quantized {
  std::vector<int> q;  ///< [R + padding rows, Kp]
  std::vector<float> scale;
  std::vector<std::int32_t> sums;
};

/// Runs RowQuantizer<Scaled, Stochastic> on src [R, K] (times column_scale when Scaled): its own
/// launch, or (by_lanes) the GPUs' kernel of rows by vector lanes on any backend.
template <bool Scaled, bool Stochastic>
Quantized run(const std::vector<float>& src, std::int64_t R, std::int64_t K,
              const std::vector<float>& column_scale, std::uint32_t key, std::int64_t first_row,
              bool by_lanes) {
  const ExecSpace space;
  Impl::ScratchArena<ExecSpace> arena(space, Impl::QuantizedRows<MemSpace>::bytes(R, K));
  const Impl::QuantizedRows<MemSpace> dst(space, arena, R, K);
  Kokkos::View<float*, MemSpace> scale_d("column_scale", column_scale.size());
  Kokkos::deep_copy(
      scale_d,
      Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
          column_scale.data(), column_scale.size()));
  const Impl::RowQuantizer<ExecSpace, Scaled, Stochastic> quantizer{to_device(src, R, K), scale_d,
                                                                    dst, key, first_row};
  if (by_lanes) {
    quantizer.run_rows_by_lanes(space, "TernaryCounter::test::row_quantizer");
  } else {
    quantizer.run(space, "TernaryCounter::test::row_quantizer");
  }
  const auto q = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, dst.q);
  const auto scale = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, dst.scale);
  const auto sums = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, dst.sums);
  Quantized got;
  for (std::size_t r = 0; r < q.extent(0); ++r) {
    for (std::size_t k = 0; k < q.extent(1); ++k) got.q.push_back(q(r, k));
  }
  for (std::int64_t r = 0; r < R; ++r) {
    got.scale.push_back(scale(r));
    got.sums.push_back(sums(r));
  }
  return got;
}

/// Every host copy of the quantizer (AVX-512 where the CPU has it, scalar), or the one of a GPU,
/// then the kernel of rows by vector lanes (the GPUs' past a few rows): body(by_lanes).
template <class Body>
void for_each_copy(Body body) {
  const char* previous = std::getenv("TERNARYCOUNTER_HOST_ISA");
  const std::string saved = previous ? previous : "";
  for (const char* isa : {"default", "baseline"}) {
    if (std::string(isa) != "default") {
      if (!std::is_same_v<MemSpace, Kokkos::HostSpace>) break;
      Impl::force_host_isa(isa);
    }
    SCOPED_TRACE(std::string("host ISA ") + isa);
    body(false);
  }
  Impl::force_host_isa(previous ? saved.c_str() : nullptr);
  SCOPED_TRACE("rows by vector lanes");
  body(true);
}

TEST(RowQuantizer, NearestRoundingIsTheReference) {
  using namespace Reference::Int8;
  for_each_copy([](bool by_lanes) {
    SplitMix64 rng(21);
    for (const auto& shape : std::vector<std::pair<std::int64_t, std::int64_t>>{
             {1, 1}, {3, 16}, {4, 37}, {5, 64}, {9, 130}, {2, 0}, {19, 300}}) {
      const std::int64_t R = shape.first, K = shape.second;  // plain locals: lambdas capture them
      const std::vector<float> x = rows_with_special_values(R, K, rng);
      const Quantized got = run<false, false>(x, R, K, {}, 0, 0, by_lanes);
      const std::int64_t Kp = Impl::padded_depth(K);
      ASSERT_EQ(std::int64_t(got.q.size()), (R + Impl::int8_padding_rows) * Kp);
      for (std::int64_t r = 0; r < R + Impl::int8_padding_rows; ++r) {
        const float a = r < R ? absmax(K, [&](std::int64_t k) { return x[r * K + k]; }) : 0.0f;
        std::int32_t sum = 0;
        for (std::int64_t k = 0; k < Kp; ++k) {
          const int want = r < R && k < K ? nearest(x[r * K + k], a) : 0;
          ASSERT_EQ(got.q[r * Kp + k], want)
              << "R " << R << " K " << K << " row " << r << " k " << k;
          sum += want;
        }
        if (r < R) {
          EXPECT_EQ(bits(got.scale[r]), bits(scale_of(a)))
              << "R " << R << " K " << K << " row " << r;
          EXPECT_EQ(got.sums[r], sum) << "R " << R << " K " << K << " row " << r;
        }
      }
    }
  });
}

TEST(RowQuantizer, StochasticRoundingOfScaledRowsIsTheReference) {
  using namespace Reference::Int8;
  for_each_copy([](bool by_lanes) {
    SplitMix64 rng(22);
    const std::uint32_t seed = 1234;
    for (const auto& shape :
         std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 5}, {4, 33}, {7, 96}, {17, 258}}) {
      const std::int64_t R = shape.first, K = shape.second;  // plain locals: lambdas capture them
      const std::int64_t first_row = 11;
      const std::vector<float> g = rows_with_special_values(R, K, rng);
      std::vector<float> column_scale(K);
      for (float& s : column_scale) s = rng.uniform(0.01f, 2.0f);
      const Quantized got = run<true, true>(g, R, K, column_scale,
                                            Impl::stream_key(seed, Impl::int8_backward_input_tag),
                                            first_row, by_lanes);
      const std::int64_t Kp = Impl::padded_depth(K);
      for (std::int64_t r = 0; r < R; ++r) {
        const auto v = [&](std::int64_t k) { return g[r * K + k] * column_scale[k]; };
        const float a = absmax(K, v);
        std::int32_t sum = 0;
        for (std::int64_t k = 0; k < Kp; ++k) {
          const std::uint64_t elem = std::uint64_t(first_row + r) * K + k;
          const int want = k < K ? stochastic(v(k), a, stream_u(seed, tag_b, elem)) : 0;
          ASSERT_EQ(got.q[r * Kp + k], want)
              << "R " << R << " K " << K << " row " << r << " k " << k;
          sum += want;
        }
        EXPECT_EQ(bits(got.scale[r]), bits(scale_of(a))) << "row " << r;
        EXPECT_EQ(got.sums[r], sum) << "row " << r;
      }
    }
  });
}

}  // namespace RowQuantizerTest
}  // namespace TernaryCounter::Test
