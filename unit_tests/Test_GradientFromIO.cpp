// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gradient_from_io: the FP32 weight gradient of micro-batches accumulated in order is the
// gradient of their concatenation bit for bit, and the dense update from it is update_from_io's
// update of the whole batch.
#include "Test_Common.hpp"
#include "Test_Helpers.hpp"

#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace TernaryCounter::Test {
namespace {

DeviceMatrix random_matrix(const char* label, std::int64_t rows, std::int64_t cols, float amplitude,
                           SplitMix64& rng) {
  std::vector<float> values(std::size_t(rows * cols));
  for (float& v : values) v = rng.uniform(-amplitude, amplitude);
  return to_device(values, rows, cols, label);
}

/// Rows [first, last) of a matrix.
DeviceMatrix rows_of(const DeviceMatrix& m, std::int64_t first, std::int64_t last) {
  return Kokkos::subview(m, std::pair<std::int64_t, std::int64_t>(first, last), Kokkos::ALL);
}

TEST(GradientFromIO, MicroBatchesInOrderAreTheWholeBatch) {
  SplitMix64 rng(41);
  const std::int64_t M = 37, out = 24, in = 40;
  const HostState start = random_state(out, in, 8, rng);
  const DeviceMatrix x = random_matrix("x", M, in, 2.0f, rng);
  const DeviceMatrix g = random_matrix("grad_out", M, out, 0.5f, rng);
  UpdateParams params;
  params.lr = 0.2;
  params.lr_scale = 1e-3;
  params.seed = 17;
  const DeviceState want = to_device(start);
  update_from_io(ExecSpace{}, want, x, g, params);
  const DeviceMatrix whole("whole", out, in);
  gradient_from_io(ExecSpace{}, x, g, whole, false);
  for (const std::vector<std::int64_t>& cuts :
       {std::vector<std::int64_t>{0, 37}, {0, 10, 37}, {0, 5, 6, 36, 37}, {0, 0, 20, 37}}) {
    SCOPED_TRACE("micro-batches at " + std::to_string(cuts.size() - 1));
    const DeviceMatrix grad_w("grad_w", out, in);
    for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
      gradient_from_io(ExecSpace{}, rows_of(x, cuts[k], cuts[k + 1]),
                       rows_of(g, cuts[k], cuts[k + 1]), grad_w, k > 0);
    }
    ExecSpace{}.fence();
    EXPECT_TRUE(same_bits(grad_w, whole));
    const DeviceState got = to_device(start);
    update(ExecSpace{}, got, grad_w, params);
    EXPECT_TRUE(same_state(to_host(got), to_host(want)));
  }
  EXPECT_FALSE(same_state(to_host(want), start)) << "the update changed nothing";
}

TEST(GradientFromIO, ExtentsThatDisagreeThrow) {
  const DeviceMatrix x("x", 4, 8), g("g", 4, 12), g3("g3", 3, 12);
  const DeviceMatrix ok("ok", 12, 8), wrong("wrong", 12, 4);
  EXPECT_THROW(gradient_from_io(ExecSpace{}, x, g3, ok, false), std::invalid_argument);
  EXPECT_THROW(gradient_from_io(ExecSpace{}, x, g, wrong, true), std::invalid_argument);
  EXPECT_NO_THROW(gradient_from_io(ExecSpace{}, x, g, ok, false));
}

}  // namespace
}  // namespace TernaryCounter::Test
