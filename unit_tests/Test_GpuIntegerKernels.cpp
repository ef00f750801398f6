// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The integer path's GPU kernels (portable Kokkos, chosen on GPUs only) run here on whichever
// backend the executable tests, against the host-loop reference: CI has no GPU, so the Serial
// and OpenMP executables are where these kernels are checked on every run.
#include "Test_Helpers.hpp"

#include "IntegerReference.hpp"
#include "products/impl/TernaryCounter_DecodedBlocks.hpp"
#include "products/impl/TernaryCounter_FewSampleInt8Forward.hpp"
#include "quantize/impl/TernaryCounter_Quantize.hpp"
#include "quantize/impl/TernaryCounter_TiledColumnQuantizer.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace TernaryCounter::Test {
namespace {

using Int8Matrix = Impl::Int8Matrix<MemSpace>;
using IntMatrix = Kokkos::View<std::int32_t**, Kokkos::LayoutRight, MemSpace>;

/// Stores the integer sums as they are (the kernels' epilogue hook).
struct KeepSums {
  IntMatrix sums;
  KOKKOS_INLINE_FUNCTION void store(std::int64_t m, std::int64_t o, std::int32_t s) const {
    sums(m, o) = s;
  }
};

TEST(GpuIntegerKernels, FewSampleForwardSumsAreExact) {
  SplitMix64 rng(11);
  for (const std::int64_t M : {1, 2, 3, 5, 8, 13, 16}) {
    for (const std::int64_t out : {1, 6, 37}) {
      const std::int64_t in = 16 * (1 + rng.below(6));
      const HostState host = random_state(out, in, 2 + rng.below(10), rng);  // C in [2, 11]
      const std::int64_t depth = Impl::padded_depth(in);
      Kokkos::View<std::int8_t**, Kokkos::LayoutRight, Kokkos::HostSpace> xq_h(
          "xq", M + Impl::int8_padding_rows, depth);  // zero-initialized: the padding
      Kokkos::View<std::int32_t*, Kokkos::HostSpace> sums_h("sums", M);
      for (std::int64_t m = 0; m < M; ++m) {
        for (std::int64_t i = 0; i < in; ++i) {
          xq_h(m, i) = std::int8_t(rng.below(255) - 127);
          sums_h(m) += xq_h(m, i);
        }
      }
      const Int8Matrix xq = Kokkos::create_mirror_view_and_copy(MemSpace{}, xq_h);
      const auto sums = Kokkos::create_mirror_view_and_copy(MemSpace{}, sums_h);
      const IntMatrix got("got", M, out);
      ASSERT_TRUE(
          Impl::few_sample_int8_forward(ExecSpace{}, xq, sums, to_device(host), M, KeepSums{got}));
      const auto got_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, got);
      for (std::int64_t m = 0; m < M; ++m) {
        for (std::int64_t o = 0; o < out; ++o) {
          std::int32_t want = 0;
          for (std::int64_t i = 0; i < in; ++i) {
            want += xq_h(m, i) * Reference::Int8::ternary(host, o, i);
          }
          ASSERT_EQ(got_h(m, o), want)
              << "M " << M << " out " << out << " in " << in << " m " << m << " o " << o;
        }
      }
    }
  }
  // Depths that are not a multiple of 16, or more than 16 samples, are left to a GEMM.
  SplitMix64 other(3);
  const DeviceState state = to_device(random_state(4, 20, 8, other));
  const Int8Matrix xq("xq", 17 + Impl::int8_padding_rows, 64);
  const Kokkos::View<std::int32_t*, MemSpace> sums("sums", 17);
  EXPECT_FALSE(Impl::few_sample_int8_forward(ExecSpace{}, xq, sums, state, 1,
                                             KeepSums{IntMatrix("y", 1, 4)}));
}

TEST(GpuIntegerKernels, DecodedBlocksAreTheTernaryWeights) {
  SplitMix64 rng(12);
  const std::int64_t out = 70, in = 136;
  const HostState host = random_state(out, in, 5, rng);
  const DeviceState state = to_device(host);
  // Rows [3, 8) of W, the depth padded past `in` with zeros.
  const Int8Matrix rows("rows", 5, Impl::padded_depth(in));
  Impl::DecodeWeightRows<ExecSpace>{state.codes, state.C, rows, 3, 5}.run(ExecSpace{});
  const auto rows_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, rows);
  for (std::int64_t r = 0; r < 5; ++r) {
    for (std::int64_t k = 0; k < std::int64_t(rows_h.extent(1)); ++k) {
      const int want = k < in ? Reference::Int8::ternary(host, 3 + r, k) : 0;
      ASSERT_EQ(int(rows_h(r, k)), want) << "row " << r << " k " << k;
    }
  }
  // Columns [64, 136) of W, transposed, the depth (out) padded with zeros.
  const Int8Matrix cols("cols", 72, Impl::padded_depth(out));
  Impl::DecodeWeightColumns<ExecSpace>{state.codes, state.C, cols, 64, 72}.run(ExecSpace{});
  const auto cols_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, cols);
  for (std::int64_t j = 0; j < 72; ++j) {
    for (std::int64_t o = 0; o < std::int64_t(cols_h.extent(1)); ++o) {
      const int want = o < out ? Reference::Int8::ternary(host, o, 64 + j) : 0;
      ASSERT_EQ(int(cols_h(j, o)), want) << "column " << 64 + j << " o " << o;
    }
  }
}

TEST(GpuIntegerKernels, TiledColumnQuantizerMatchesTheReference) {
  using namespace Reference::Int8;
  SplitMix64 rng(13);
  const std::int64_t M = 70, in = 67, out = 130, row_offset = 5;
  const std::uint32_t seed = 77;
  std::vector<float> x(M * in), g(M * out);
  for (float& v : x) v = rng.uniform(-3.0f, 3.0f);
  for (float& v : g) v = rng.uniform(-0.01f, 0.01f);
  for (std::int64_t m = 0; m < M; ++m) {
    x[m * in + 2] = 0.0f;  // a zero column: q = 0, scale 0
    g[m * out + 9] = 0.0f;
  }
  x[7 * in + 4] = std::numeric_limits<float>::infinity();  // non-finite: q = 0, scale NaN
  g[3 * out + 11] = std::numeric_limits<float>::quiet_NaN();
  const std::int64_t depth = Impl::padded_depth(M);
  const Int8Matrix xq("xq", in, depth), gq("gq", out, depth);
  const Kokkos::View<float*, MemSpace> x_scale("x_scale", in), gq_scale("gq_scale", out);
  const Kokkos::View<std::int32_t*, MemSpace> gq_sums("gq_sums", out);
  const Kokkos::View<std::uint32_t*, MemSpace> amax("amax", in + out);
  Impl::TiledColumnQuantizer<ExecSpace>{to_device(x, M, in),
                                        to_device(g, M, out),
                                        xq,
                                        x_scale,
                                        gq,
                                        gq_scale,
                                        gq_sums,
                                        amax,
                                        Impl::stream_key(seed, tag_w),
                                        row_offset}
      .run(ExecSpace{});
  const auto xq_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, xq);
  const auto gq_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, gq);
  const auto sx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, x_scale);
  const auto sg = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, gq_scale);
  const auto sums = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, gq_sums);
  for (std::int64_t i = 0; i < in; ++i) {
    const float a = absmax(M, [&](std::int64_t m) { return x[m * in + i]; });
    ASSERT_EQ(bits(sx(i)), bits(scale_of(a))) << "column " << i;
    for (std::int64_t m = 0; m < depth; ++m) {
      const int want = m < M ? nearest(x[m * in + i], a) : 0;
      ASSERT_EQ(int(xq_h(i, m)), want) << "x column " << i << " sample " << m;
    }
  }
  for (std::int64_t o = 0; o < out; ++o) {
    const float a = absmax(M, [&](std::int64_t m) { return g[m * out + o]; });
    ASSERT_EQ(bits(sg(o)), bits(scale_of(a))) << "column " << o;
    std::int32_t sum = 0;
    for (std::int64_t m = 0; m < depth; ++m) {
      const std::uint64_t elem = std::uint64_t(row_offset + o) * M + m;
      const int want = m < M ? stochastic(g[m * out + o], a, stream_u(seed, tag_w, elem)) : 0;
      ASSERT_EQ(int(gq_h(o, m)), want) << "grad_out column " << o << " sample " << m;
      sum += want;
    }
    EXPECT_EQ(sums(o), sum) << "column " << o;
  }
}

}  // namespace
}  // namespace TernaryCounter::Test
