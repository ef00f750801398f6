// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// update_from_io of a few samples (M <= 16), where on GPUs the row update forms the gradient
// itself in both of its passes (FP32: FewSampleFloatGradientRows; int8: FewSampleGradientRows):
// bit for bit against the host-loop references, on odd shapes. The row update with the FP32
// source runs here on every backend, so its team body is tested on the host too.
#include "Test_Helpers.hpp"

#include "IntegerReference.hpp"
#include "update/impl/TernaryCounter_FloatGradientRows.hpp"
#include "update/impl/TernaryCounter_RowUpdateKernel.hpp"

#include <limits>
#include <string>
#include <vector>

namespace TernaryCounter::Test {
namespace {

struct FewShape {
  std::int64_t M, out, in;
};

/// x in [-2, 2), grad_out in [-0.5, 0.5) with one NaN (a skipped row).
void few_sample_inputs(const FewShape& s, SplitMix64& rng, std::vector<float>& x,
                       std::vector<float>& g) {
  x.resize(s.M * s.in);
  g.resize(s.M * s.out);
  for (float& v : x) v = rng.uniform(-2.0f, 2.0f);
  for (float& v : g) v = rng.uniform(-0.5f, 0.5f);
  g[(s.M - 1) * s.out + s.out / 2] = std::numeric_limits<float>::quiet_NaN();
}

std::string describe(const FewShape& s) {
  return "M " + std::to_string(s.M) + " out " + std::to_string(s.out) + " in " +
         std::to_string(s.in);
}

/// The row update with the FP32 few-sample source, in two calls over the rows (the second's
/// row_offset and first_row set) and several team sizes, against Reference::update_from_io. Rows
/// of 4 to 1028 columns: one partial block, whole blocks, and a partial block after whole ones.
TEST(FewSampleUpdate, RowUpdateWithFloatSourceMatchesTheReference) {
  SplitMix64 rng(29);
  const std::int64_t most = Impl::few_sample_update_fp32_max;  // the source's most samples
  for (const FewShape s : {FewShape{1, 5, 4}, FewShape{most, 9, 260}, FewShape{most, 33, 512},
                           FewShape{2, 6, 36}, FewShape{1, 3, 1028}}) {
    SCOPED_TRACE(describe(s));
    const HostState start = random_state(s.out, s.in, 8, rng);
    std::vector<float> x, g;
    few_sample_inputs(s, rng, x, g);
    const UpdateParams params = counter_moving_params(0xFEEDu + std::uint32_t(s.in));
    const HostState want = create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, start);
    const UpdateReport want_report =
        Reference::update_from_io(want, x.data(), g.data(), s.M, params);
    ASSERT_EQ(want_report.skipped_rows, 1);
    const DeviceMatrix xd = to_device(x, s.M, s.in), gd = to_device(g, s.M, s.out);
    for (const int team_size : valid_team_sizes(s.in)) {
      SCOPED_TRACE("team size " + std::to_string(team_size));
      const DeviceState state = to_device(start);
      const SkippedRowsView<MemSpace> skipped("skipped");
      const std::int64_t split = (s.out + 1) / 2;
      for (const auto rows :
           {std::make_pair(std::int64_t(0), split), std::make_pair(split, s.out)}) {
        UpdateParams p = params;
        p.row_offset = rows.first;
        const UpdateConstants k = make_update_constants(p, s.out, s.in);
        const auto part = state.row_range(rows.first, rows.second);
        using Source = Impl::FewSampleFloatGradientRows<MemSpace>;
        Impl::RowUpdateKernel<ExecSpace, false, Source>{
            part.codes, part.scale, part.v, {}, k, skipped, Source{xd, gd, rows.first}}
            .enqueue(ExecSpace{}, team_size);
      }
      std::int64_t skipped_h = 0;
      Kokkos::deep_copy(skipped_h, skipped);
      EXPECT_EQ(skipped_h, want_report.skipped_rows);
      EXPECT_TRUE(same_state(to_host(state), want));
    }
  }
}

/// The public update_from_io, FP32 and int8, of 1 to 16 samples (GPUs: the few-sample row
/// updates, the FP32 one up to few_sample_update_fp32_max samples and the tile engine past it)
/// in every valid team size, against the references.
TEST(FewSampleUpdate, UpdateFromIoMatchesTheReference) {
  SplitMix64 rng(31);
  for (const FewShape s : {FewShape{1, 7, 36}, FewShape{3, 5, 260}, FewShape{4, 3, 1028},
                           FewShape{5, 4, 100}, FewShape{16, 9, 516}, FewShape{13, 2, 2052}}) {
    SCOPED_TRACE(describe(s));
    const HostState start = random_state(s.out, s.in, 8, rng);
    std::vector<float> x, g;
    few_sample_inputs(s, rng, x, g);
    const UpdateParams params = counter_moving_params(0xACEu + std::uint32_t(s.out));
    const DeviceMatrix xd = to_device(x, s.M, s.in), gd = to_device(g, s.M, s.out);
    for (const Precision precision : {Precision::fp32, Precision::int8}) {
      SCOPED_TRACE(precision == Precision::int8 ? "int8" : "fp32");
      const HostState want = create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, start);
      const UpdateReport want_report =
          precision == Precision::int8
              ? Reference::Int8::update_from_io(want, x.data(), g.data(), s.M, params)
              : Reference::update_from_io(want, x.data(), g.data(), s.M, params);
      ASSERT_EQ(want_report.skipped_rows, 1);
      for (const int team_size : valid_team_sizes(s.in)) {
        SCOPED_TRACE("team size " + std::to_string(team_size));
        UpdateParams p = params;
        p.team_size = team_size;
        const DeviceState state = to_device(start);
        const UpdateReport got = update_from_io(ExecSpace{}, state, xd, gd, p, precision);
        EXPECT_EQ(got.skipped_rows, want_report.skipped_rows);
        EXPECT_TRUE(same_state(to_host(state), want));
      }
    }
  }
}

}  // namespace
}  // namespace TernaryCounter::Test
