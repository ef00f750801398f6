// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The integer path's GPU kernels (portable Kokkos, chosen on GPUs only) run here on whichever
// backend the executable tests, against the host-loop reference: CI has no GPU, so the Serial
// and OpenMP executables are where these kernels are checked on every run.
#include "Test_Helpers.hpp"

#include "IntegerReference.hpp"
#include "engines/TernaryCounter_DecodedBlocks.hpp"
#include "engines/TernaryCounter_FewSampleInt8Forward.hpp"
#include "engines/TernaryCounter_Int8Epilogues.hpp"
#include "engines/TernaryCounter_Quantize.hpp"
#include "engines/TernaryCounter_TiledColumnQuantizer.hpp"
#include "engines/TernaryCounter_VectorRowQuantizer.hpp"
#include "products/impl/TernaryCounter_FewSampleInt8BackwardInput.hpp"
#include "update/impl/TernaryCounter_IntegerGradientRows.hpp"
#include "update/impl/TernaryCounter_RowUpdateKernel.hpp"

#include <cmath>
#include <cstring>
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

TEST(GpuIntegerKernels, FewSampleBackwardInputSumsAreExact) {
  SplitMix64 rng(19);
  for (const std::int64_t M : {1, 2, 3, 4, 5, 9, 16}) {
    for (const std::int64_t out : {1, 6, 37, 130}) {
      const std::int64_t in = 16 * (1 + rng.below(4));
      const HostState host = random_state(out, in, 2 + rng.below(10), rng);  // C in [2, 11]
      const std::int64_t depth = Impl::padded_depth(out);
      Kokkos::View<std::int8_t**, Kokkos::LayoutRight, Kokkos::HostSpace> hq_h(
          "hq", M + Impl::int8_padding_rows, depth);  // zero-initialized: the padding
      Kokkos::View<std::int32_t*, Kokkos::HostSpace> sums_h("sums", M);
      for (std::int64_t m = 0; m < M; ++m) {
        for (std::int64_t o = 0; o < out; ++o) {
          hq_h(m, o) = std::int8_t(rng.below(255) - 127);
          sums_h(m) += hq_h(m, o);
        }
      }
      const Int8Matrix hq = Kokkos::create_mirror_view_and_copy(MemSpace{}, hq_h);
      const auto h_sums = Kokkos::create_mirror_view_and_copy(MemSpace{}, sums_h);
      ASSERT_EQ(Impl::few_sample_backward_input_sums(M, in), M * in);
      const IntMatrix scratch("scratch", M, in), got("got", M, in);
      Kokkos::deep_copy(scratch, 12345);  // any contents
      ASSERT_TRUE(Impl::few_sample_int8_backward_input(ExecSpace{}, hq, h_sums, to_device(host), M,
                                                       scratch, KeepSums{got}));
      const auto got_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, got);
      for (std::int64_t m = 0; m < M; ++m) {
        for (std::int64_t i = 0; i < in; ++i) {
          std::int32_t want = 0;
          for (std::int64_t o = 0; o < out; ++o) {
            want += hq_h(m, o) * Reference::Int8::ternary(host, o, i);
          }
          ASSERT_EQ(got_h(m, i), want)
              << "M " << M << " out " << out << " in " << in << " m " << m << " i " << i;
        }
      }
    }
  }
  EXPECT_EQ(Impl::few_sample_backward_input_sums(17, 16), 0);  // a GEMM serves
  EXPECT_EQ(Impl::few_sample_backward_input_sums(4, 20), 0);
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

/// The vendor GEMM's epilogue pass: every element of rows x cols (more rows than a team holds,
/// widths that leave a short group of 4) finished once, in place, and into a wider output at an
/// offset (the 16-bit outputs' blocks), nothing past them touched.
TEST(GpuIntegerKernels, FinishInPlaceStoresEveryElementOnce) {
  SplitMix64 rng(13);
  for (const std::int64_t cols : {1, 6, 13, 260}) {
    const std::int64_t rows = 19, first_col = 3, width = cols + 5;
    std::vector<std::int32_t> sums_h(rows * cols);
    for (std::int32_t& v : sums_h) v = std::int32_t(rng.below(2001)) - 1000;
    std::vector<float> sums_bits(sums_h.size());
    std::memcpy(sums_bits.data(), sums_h.data(), sums_h.size() * sizeof(float));
    const DeviceMatrix sums = to_device(sums_bits, rows, cols);
    const IntMatrix offset("offset", rows, width);
    Kokkos::deep_copy(offset, -7);
    Impl::finish_in_place(ExecSpace{}, sums, rows, cols, KeepSums{offset}, "test", first_col);
    std::vector<float> row_scale_h(rows);  // r + 1
    for (std::int64_t r = 0; r < rows; ++r) row_scale_h[r] = float(r + 1);
    const Kokkos::View<float*, MemSpace> row_scale("row_scale", rows);
    Kokkos::deep_copy(row_scale,
                      Kokkos::View<const float*, Kokkos::HostSpace>(row_scale_h.data(), rows));
    const DeviceMatrix in_place = sums;
    Impl::finish_in_place(ExecSpace{}, sums, rows, cols,
                          Impl::BackwardInputEpilogue<MemSpace>{in_place, row_scale}, "test");
    const auto offset_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, offset);
    const auto in_place_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, in_place);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < width; ++c) {
        const bool inside = c >= first_col && c < first_col + cols;
        ASSERT_EQ(offset_h(r, c), inside ? sums_h[r * cols + c - first_col] : -7)
            << "cols " << cols << " row " << r << " column " << c;
      }
      for (std::int64_t c = 0; c < cols; ++c) {
        ASSERT_EQ(bits(in_place_h(r, c)), bits(float(sums_h[r * cols + c]) * float(r + 1)))
            << "cols " << cols << " row " << r << " column " << c;
      }
    }
  }
}

/// Columns of odd widths (a thread per column's absmax) and of whole float4 rows (4 per thread).
TEST(GpuIntegerKernels, TiledColumnQuantizerMatchesTheReference) {
  using namespace Reference::Int8;
  SplitMix64 rng(13);
  for (const auto& shape : {std::pair<std::int64_t, std::int64_t>{67, 130}, {68, 132}}) {
    const std::int64_t in = shape.first, out = shape.second;
    SCOPED_TRACE("in " + std::to_string(in) + " out " + std::to_string(out));
    const std::int64_t M = 70, row_offset = 5;
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
}

/// The row update on the gradient's integer sources (the GPUs' update_from_io in int8): the
/// operands from TiledColumnQuantizer, then the row update reading each group of the gradient
/// from the few samples' quantized operands (FewSampleGradientRows) or from int32 rows in memory
/// (IntegerSumRows), against the reference's whole update, in every team size given and with
/// the rows in two calls (the second's row_offset set).
TEST(GpuIntegerKernels, RowUpdateOnIntegerGradientsMatchesTheReference) {
  using namespace Reference::Int8;
  SplitMix64 rng(17);
  struct Case {
    std::int64_t M, out, in;
  };
  for (const Case c : {Case{1, 5, 4}, Case{3, 9, 260}, Case{16, 33, 512}, Case{13, 6, 36}}) {
    SCOPED_TRACE("M " + std::to_string(c.M) + " out " + std::to_string(c.out) + " in " +
                 std::to_string(c.in));
    const HostState start = random_state(c.out, c.in, 8, rng);
    std::vector<float> x(c.M * c.in), g(c.M * c.out);
    for (float& v : x) v = rng.uniform(-2.0f, 2.0f);
    for (float& v : g) v = rng.uniform(-0.5f, 0.5f);
    g[(c.M - 1) * c.out + c.out / 2] = std::numeric_limits<float>::quiet_NaN();  // a skipped row
    UpdateParams params;
    params.lr = 0.05;
    params.lr_scale = 2e-4;
    params.rms_beta = 0.9;
    params.seed = 0xBEEFu + std::uint32_t(c.out);
    const HostState want = create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, start);
    const UpdateReport want_report = update_from_io(want, x.data(), g.data(), c.M, params);
    ASSERT_EQ(want_report.skipped_rows, 1);

    const std::int64_t depth = Impl::padded_depth(c.M);
    const Int8Matrix xq("xq", c.in, depth), gq("gq", c.out, depth);
    const Kokkos::View<float*, MemSpace> x_scale("x_scale", c.in), gq_scale("gq_scale", c.out);
    const Kokkos::View<std::int32_t*, MemSpace> gq_sums("gq_sums", c.out);
    const Kokkos::View<std::uint32_t*, MemSpace> amax("amax", c.in + c.out);
    Impl::TiledColumnQuantizer<ExecSpace>{to_device(x, c.M, c.in),
                                          to_device(g, c.M, c.out),
                                          xq,
                                          x_scale,
                                          gq,
                                          gq_scale,
                                          gq_sums,
                                          amax,
                                          Impl::stream_key(params.seed, tag_w),
                                          0}
        .run(ExecSpace{});
    // G = gq xq^T on the host, for IntegerSumRows.
    const auto xq_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, xq);
    const auto gq_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, gq);
    Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Kokkos::HostSpace> sums_h("G", c.out, c.in);
    for (std::int64_t o = 0; o < c.out; ++o) {
      for (std::int64_t i = 0; i < c.in; ++i) {
        for (std::int64_t m = 0; m < c.M; ++m) sums_h(o, i) += gq_h(o, m) * xq_h(i, m);
      }
    }
    const auto sums = Kokkos::create_mirror_view_and_copy(MemSpace{}, sums_h);
    const std::int64_t words = (c.M + 3) / 4;
    const Kokkos::View<std::uint32_t**, Kokkos::LayoutRight, MemSpace> x_words("x_words", words,
                                                                               c.in);
    Impl::pack_sample_words(ExecSpace{}, xq, x_words);

    for (const int team_size : {0, 1, 64}) {
      if (team_size > 1 && std::is_same_v<MemSpace, Kokkos::HostSpace>) continue;
      for (const bool few_samples : {true, false}) {
        SCOPED_TRACE(std::string(few_samples ? "few samples" : "integer sums") + ", team size " +
                     std::to_string(team_size));
        const DeviceState state = to_device(start);
        const SkippedRowsView<MemSpace> skipped("skipped");
        const std::int64_t split = (c.out + 1) / 2;
        for (const auto rows :
             {std::make_pair(std::int64_t(0), split), std::make_pair(split, c.out)}) {
          UpdateParams p = params;
          p.row_offset = rows.first;
          UpdateConstants k = make_update_constants(p, c.out, c.in);
          const auto part = state.row_range(rows.first, rows.second);
          const auto sg = Kokkos::subview(gq_scale, rows);
          if (few_samples) {
            const Impl::FewSampleGradientRows<MemSpace> source{
                Kokkos::subview(gq, rows, Kokkos::ALL), x_words, sg, x_scale, int(words)};
            Impl::RowUpdateKernel<ExecSpace, false, Impl::FewSampleGradientRows<MemSpace>>{
                part.codes, part.scale, part.v, {}, k, skipped, source}
                .enqueue(ExecSpace{}, team_size);
          } else {
            const Impl::IntegerSumRows<MemSpace> source{sums.data() + rows.first * sums.stride(0),
                                                        std::int64_t(sums.stride(0)), sg, x_scale};
            Impl::RowUpdateKernel<ExecSpace, false, Impl::IntegerSumRows<MemSpace>>{
                part.codes, part.scale, part.v, {}, k, skipped, source}
                .enqueue(ExecSpace{}, team_size);
          }
        }
        std::int64_t skipped_h = 0;
        Kokkos::deep_copy(skipped_h, skipped);
        EXPECT_EQ(skipped_h, want_report.skipped_rows);
        EXPECT_TRUE(same_state(to_host(state), want));
      }
    }
  }
}

/// The CUDA row quantizers of forward (nearest) and backward_input (scaled, stochastic on
/// tag_b) against the reference's, on rows held in registers and rows longer than that (on a
/// host backend a team is one thread: every row past 16 columns), with zero and non-finite rows.
TEST(GpuIntegerKernels, VectorRowQuantizerMatchesTheReference) {
  using namespace Reference::Int8;
  SplitMix64 rng(23);
  const std::int64_t first_row = 3;
  const std::uint32_t seed = 91;
  for (const std::int64_t depth : {4, 36, 4100}) {
    const std::int64_t rows = 5, padded = Impl::padded_depth(depth);
    std::vector<float> x(rows * depth), column_scale(depth);
    for (float& v : x) v = rng.uniform(-3.0f, 3.0f);
    for (float& v : column_scale) v = rng.uniform(0.5f, 2.0f);
    for (std::int64_t k = 0; k < depth; ++k) x[1 * depth + k] = 0.0f;  // a zero row
    x[2 * depth + depth / 2] = std::numeric_limits<float>::infinity();
    const DeviceMatrix xd = to_device(x, rows, depth);
    const Kokkos::View<float*, MemSpace> sd("column_scale", depth);
    Kokkos::deep_copy(sd,
                      Kokkos::View<const float*, Kokkos::HostSpace>(column_scale.data(), depth));
    for (const bool backward : {false, true}) {
      SCOPED_TRACE(std::string(backward ? "scaled, stochastic" : "nearest") + ", depth " +
                   std::to_string(depth));
      const Int8Matrix q("q", rows + Impl::int8_padding_rows, padded);
      Kokkos::deep_copy(q, std::int8_t(55));  // the padding must be written
      const Kokkos::View<float*, MemSpace> scale("scale", rows);
      const Kokkos::View<std::int32_t*, MemSpace> sums("sums", rows);
      const std::uint32_t key = Impl::stream_key(seed, tag_b);
      if (backward) {
        using Quantizer = Impl::VectorRowQuantizer<ExecSpace, true, true>;
        ASSERT_TRUE(Quantizer::runs(xd, sd));
        Quantizer{xd, sd, q, scale, sums, key, first_row}.run(ExecSpace{}, "test");
      } else {
        using Quantizer = Impl::VectorRowQuantizer<ExecSpace, false, false>;
        ASSERT_TRUE(Quantizer::runs(xd, sd));
        Quantizer{xd, sd, q, scale, sums, key, first_row}.run(ExecSpace{}, "test");
      }
      const auto q_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, q);
      const auto scale_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, scale);
      const auto sums_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, sums);
      for (std::int64_t r = 0; r < rows; ++r) {
        const auto value = [&](std::int64_t k) {
          return backward ? x[r * depth + k] * column_scale[k] : x[r * depth + k];
        };
        const float a = absmax(depth, value);
        ASSERT_EQ(bits(scale_h(r)), bits(scale_of(a))) << "row " << r;
        std::int32_t sum = 0;
        for (std::int64_t k = 0; k < padded; ++k) {
          int want = 0;
          if (k < depth) {
            const std::uint64_t elem = std::uint64_t(first_row + r) * depth + k;
            want = backward ? stochastic(value(k), a, stream_u(seed, tag_b, elem))
                            : nearest(value(k), a);
          }
          ASSERT_EQ(int(q_h(r, k)), want) << "row " << r << " column " << k;
          sum += want;
        }
        EXPECT_EQ(sums_h(r), sum) << "row " << r;
      }
    }
  }
  // More rows than it serves: the team-per-row quantizer (RowQuantizer.hpp) takes them.
  const Kokkos::View<float*, MemSpace> no_scale("no_scale", 4);
  EXPECT_FALSE((Impl::VectorRowQuantizer<ExecSpace, false, false>::runs(
      to_device(std::vector<float>(17 * 4, 1.0f), 17, 4), no_scale)));
}

}  // namespace
}  // namespace TernaryCounter::Test
