// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// SPEC §4: the same bits for every team size and every row split (rows updated in separate calls
// on subviews with params.row_offset), and for from_io every workspace size, the default's bound
// included.
#include "Test_Helpers.hpp"
#include "engines/TernaryCounter_Tiling.hpp"
#include "update/impl/TernaryCounter_RowUpdateKernel.hpp"

#include <algorithm>
#include <tuple>
#include <type_traits>

namespace TernaryCounter::Test {
namespace {

class RowSplits : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { TERNARYCOUNTER_SKIP_IF_CASE_ABSENT(GetParam()); }
};

// What the library owes for a requested team size (which sizes a backend can launch is Kokkos'
// business): it runs with the spec's bits, or it is refused before anything changes with a
// std::invalid_argument naming the size. The backend's choice (0) and 1 always run, and the
// refusals are exactly the sizes above the one limit the message names.
TEST(TeamSizes, EachSizeRunsBitExactOrIsRefusedBeforeAnyChange) {
  for (const std::string name : {"dense_lagged_c8", "io_basic_c11"}) {
    const fs::path dir = case_dir(name);
    const Case c = Conformance::read_case(dir);
    const Result want = Conformance::read_result(dir, c, "spec_");
    std::vector<int> sizes = {0};
    sizes.insert(sizes.end(), team_size_candidates().begin(), team_size_candidates().end());
    int smallest_refused = 0, largest_run = 0;
    for (int t : sizes) {
      SCOPED_TRACE(name + " team_size " + std::to_string(t));
      const DeviceState state = to_device(c.state());
      UpdateParams p = c.params;
      p.team_size = t;
      try {
        std::int64_t skipped;
        if (c.kind == "dense") {
          skipped = update(ExecSpace{}, state, to_device(c.grad_w, c.out, c.in), p).skipped_rows;
        } else {
          skipped = update_from_io(ExecSpace{}, state, to_device(c.x, c.M, c.in),
                                   to_device(c.grad_out, c.M, c.out), p)
                        .skipped_rows;
        }
        EXPECT_TRUE(bit_exact(Conformance::result_of(to_host(state), skipped), want));
        largest_run = std::max(largest_run, t);
      } catch (const std::invalid_argument& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("team_size = " + std::to_string(t) + " "), std::string::npos) << msg;
        EXPECT_TRUE(same_state(c.state(), to_host(state))) << "a refused call changed the state";
        EXPECT_GT(t, 1) << msg;
        if (smallest_refused == 0) smallest_refused = t;
      }
    }
    if (smallest_refused != 0) EXPECT_LT(largest_run, smallest_refused) << "refusals not a limit";
    std::cout << "[ " << name << " on " << ExecSpace::name() << ": team sizes up to " << largest_run
              << " run" << (smallest_refused ? ", from " : "")
              << (smallest_refused ? std::to_string(smallest_refused) + " refused" : "") << " ]\n";
  }
}

// The backend's choice (team_size 0), as Tiling documents it: GPUs give each thread of a row at
// most one 8-group unit, in whole warps and without an idle warp, for rows of up to
// update_team_size units, and wider rows update_team_size threads; hosts run a row per thread.
TEST(TeamSizes, DefaultGivesEachThreadOneUnitUpToTheWidestTeam) {
  using Kernel = Impl::RowUpdateKernel<ExecSpace>;
  constexpr int widest = Tiling<ExecSpace>::update_team_size;
  for (const std::int64_t in : {4, 256, 260, 4096, 6144, 11008, 16384, 16388, 32768, 40000}) {
    SCOPED_TRACE("in " + std::to_string(in));
    const std::int64_t units = (in + 255) / 256 * 8;  // 8 units per canonical block of 256
    const int team = Kernel::resolve_team_size(ExecSpace{}, 0, in);
    if (widest == 1) {
      EXPECT_EQ(team, 1);
    } else if (units <= widest) {
      EXPECT_GE(team, units);
      EXPECT_LT(team, units + 32);
      EXPECT_EQ(team % 32, 0);
    } else {
      EXPECT_EQ(team, widest);
    }
  }
}

// The gradient's rows are read as 16-byte vectors when they can be: a View allocated by Kokkos
// (update's grad_w, update_from_io's workspace) can, a View starting one float in or with rows
// of a width that is not a multiple of 4 floats cannot.
TEST(RowUpdateLoads, AllocatedRowsOfWholeVectorsAreReadAsVectors) {
  using Kernel = Impl::RowUpdateKernel<ExecSpace>;
  using Unmanaged = Kokkos::View<const float**, Kokkos::LayoutRight, MemSpace,
                                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> grad("grad", 8, 64);
  EXPECT_TRUE(Kernel::vector_rows(grad));
  const auto rows = Kokkos::subview(grad, std::pair<int, int>(2, 6), Kokkos::ALL);
  EXPECT_TRUE(Kernel::vector_rows(rows));
  EXPECT_FALSE(Kernel::vector_rows(Unmanaged(grad.data() + 1, 8, 60)));
  EXPECT_FALSE(Kernel::vector_rows(Unmanaged(grad.data(), 4, 126)));
}

// A gradient that starts one float into its allocation is read a float at a time (on GPUs by a
// kernel of its own): the spec's bits all the same, at every team size.
TEST(RowUpdateLoads, GradientRowsOfScalarsGiveTheSpecsBits) {
  const fs::path dir = case_dir("dense_lagged_c8");
  const Case c = Conformance::read_case(dir);
  const Result want = Conformance::read_result(dir, c, "spec_");
  const std::size_t n = c.grad_w.size();
  const Kokkos::View<float*, MemSpace> buffer("TernaryCounter::test::grad_buffer", n + 1);
  const auto host = Kokkos::create_mirror_view(buffer);
  std::copy(c.grad_w.begin(), c.grad_w.end(), host.data() + 1);
  Kokkos::deep_copy(buffer, host);
  const Kokkos::View<const float**, Kokkos::LayoutRight, MemSpace,
                     Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      grad(buffer.data() + 1, c.out, c.in);
  ASSERT_FALSE(Impl::RowUpdateKernel<ExecSpace>::vector_rows(grad));
  for (int team_size : valid_team_sizes(c.in)) {
    SCOPED_TRACE("team_size " + std::to_string(team_size));
    const DeviceState state = to_device(c.state());
    UpdateParams p = c.params;
    p.team_size = team_size;
    const std::int64_t skipped = update(ExecSpace{}, state, grad, p).skipped_rows;
    EXPECT_TRUE(bit_exact(Conformance::result_of(to_host(state), skipped), want));
  }
}

// A unit's groups read a batch at a time (the row sums' loads) are the groups read one at a
// time, in the same order: full units take the batched loop, a row's short last block the loop
// with a break. Host memory, so that the visits can be recorded.
TEST(RowUpdateLoads, BatchedGroupReadsVisitTheSameGroupsInOrder) {
  using Space = Kokkos::DefaultHostExecutionSpace;
  using Kernel = Impl::RowUpdateKernel<Space>;
  using Visit = std::tuple<int, float, float, float, float, std::uint32_t>;
  for (const std::int64_t in : {4, 100, 256, 260, 1000, 2048}) {
    SCOPED_TRACE("in " + std::to_string(in));
    constexpr std::int64_t rows = 3;
    const Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> grad("grad", rows, in);
    const Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, Kokkos::HostSpace> codes(
        "codes", rows, in / codes_per_group * bytes_per_group);
    for (std::int64_t r = 0; r < rows; ++r) {  // every value tells where it came from
      for (std::int64_t j = 0; j < in; ++j) grad(r, j) = float(r * in + j);
      for (std::size_t b = 0; b < codes.extent(1); ++b)
        codes(r, b) = std::uint8_t((r + 7 * b) % 251);
    }
    Kernel kernel;
    kernel.grad = grad;
    kernel.codes = codes;
    kernel.k.in = in;
    const auto visits = [&](auto batch, std::int64_t row, std::int64_t u) {
      std::vector<Visit> seen;
      kernel.template for_each_group<decltype(batch)::value>(
          row, u, [&](int r, const Impl::Float4& g, std::uint32_t word) {
            seen.emplace_back(r, g.v[0], g.v[1], g.v[2], g.v[3], word);
          });
      return seen;
    };
    for (std::int64_t row = 0; row < rows; ++row) {
      for (std::int64_t u = 0; u < kernel.units(); ++u) {
        const std::vector<Visit> one = visits(std::integral_constant<int, 1>{}, row, u);
        ASSERT_EQ(std::int64_t(one.size()), kernel.group_count(u));
        for (const auto& [r, g0, g1, g2, g3, word] : one) {  // group r of unit u, read whole
          const std::int64_t col = codes_per_group * Kernel::unit_group(u, r);
          EXPECT_EQ(std::make_tuple(g0, g1, g2, g3),
                    std::make_tuple(grad(row, col), grad(row, col + 1), grad(row, col + 2),
                                    grad(row, col + 3)));
          EXPECT_EQ(word, load_group(&codes(row, col / codes_per_group * bytes_per_group)));
        }
        EXPECT_EQ(visits(std::integral_constant<int, 2>{}, row, u), one);
        EXPECT_EQ(visits(std::integral_constant<int, 4>{}, row, u), one);
        EXPECT_EQ(visits(std::integral_constant<int, 8>{}, row, u), one);
      }
    }
  }
}

// The bigger from_io cases are too slow to run in one-row calls: each call computes whole
// gradient tiles over all of M, and the baseline copy of the host kernels (a build without
// -march, TERNARYCOUNTER_HOST_ISA=baseline) calls libm for each fma. They get uneven multi-row
// splits; io_basic_c11 and spec_nonfinite_io take 1 and 7.
bool heavy(const Case& c) {
  return c.kind == "from_io" && c.out * c.in * c.M > 1'000'000;
}

TEST_P(RowSplits, SameBitsForEveryTeamSizeAndSplit) {
  const fs::path dir = case_dir(GetParam());
  const Case c = Conformance::read_case(dir);
  const Result want = Conformance::read_result(dir, c, "spec_");
  const std::vector<std::int64_t> splits =
      heavy(c) ? std::vector<std::int64_t>{29, c.out} : std::vector<std::int64_t>{1, 7, c.out};
  for (int team_size : valid_team_sizes(c.in)) {
    for (std::int64_t rows : splits) {
      RunOptions opt;
      opt.team_size = team_size;
      opt.rows_per_call = rows;
      SCOPED_TRACE(describe(opt));
      EXPECT_TRUE(bit_exact(run_case(c, opt), want));
    }
  }
  // The asynchronous overloads: every split's calls enqueued before one fence.
  for (std::int64_t rows : splits) {
    RunOptions opt;
    opt.rows_per_call = rows;
    opt.asynchronous = true;
    SCOPED_TRACE(describe(opt));
    EXPECT_TRUE(bit_exact(run_case(c, opt), want));
  }
}

class FromIoWorkspace : public RowSplits {};

TEST_P(FromIoWorkspace, SameBitsForEveryWorkspaceSize) {
  const fs::path dir = case_dir(GetParam());
  const Case c = Conformance::read_case(dir);
  ASSERT_EQ(c.kind, "from_io");
  const Result want = Conformance::read_result(dir, c, "spec_");
  // Workspaces smaller than the layer make update_from_io work in chunks of rows.
  const std::vector<std::int64_t> workspaces = heavy(c)
                                                   ? std::vector<std::int64_t>{29, c.out + 3}
                                                   : std::vector<std::int64_t>{1, 5, 64, c.out + 3};
  for (std::int64_t ws : workspaces) {
    for (std::int64_t rows : {std::int64_t(7), c.out}) {
      if (heavy(c) && rows != c.out) continue;
      RunOptions opt;
      opt.workspace_rows = ws;
      opt.rows_per_call = rows;
      SCOPED_TRACE(describe(opt));
      EXPECT_TRUE(bit_exact(run_case(c, opt), want));
    }
  }
}

// The default workspace is a small share of the layer's gradient: at most the larger of 4 MiB and
// an eighth of out * in * 4 bytes, within the backend's budget, whole tile rows (or all rows), and
// one tile row where a tile row is larger than that.
TEST(FromIoWorkspaceRows, DefaultIsBoundedByAShareOfTheGradient) {
  using T = Tiling<ExecSpace>;
  const std::pair<std::int64_t, std::int64_t> shapes[] = {
      {16, 64},      {2048, 1024},  {4096, 4096}, {11008, 4096},
      {4096, 11008}, {32000, 4096}, {1, 1 << 22}, {100000, 100000}};
  for (const auto& [out, in] : shapes) {
    SCOPED_TRACE(std::to_string(out) + " x " + std::to_string(in));
    const std::int64_t rows = from_io_workspace_rows<ExecSpace>(out, in);
    const std::int64_t bound =
        std::min(std::int64_t(T::workspace_bytes),
                 std::max(from_io_workspace_floor_bytes, out * in * 4 / from_io_workspace_share));
    EXPECT_GE(rows, std::min<std::int64_t>(out, T::tile_rows));
    EXPECT_LE(rows, out);
    EXPECT_TRUE(rows == out || rows % T::tile_rows == 0);
    EXPECT_TRUE(rows * in * 4 <= bound || rows == std::min<std::int64_t>(out, T::tile_rows));
  }
}

// The default workspace takes a layer in several chunks where a workspace of all rows takes it in
// one: the same bits, in both precisions.
TEST(FromIoWorkspaceRows, DefaultChunksChangeNoBit) {
  const std::int64_t out = 2048, in = 1024, M = 12;
  ASSERT_LT(from_io_workspace_rows<ExecSpace>(out, in), out);
  SplitMix64 rng(11);
  const HostState start = random_state(out, in, 8, rng);
  std::vector<float> x(M * in), g(M * out);
  for (float& value : x) value = rng.uniform(-1.0f, 1.0f);
  for (float& value : g) value = rng.uniform(-0.5f, 0.5f);
  const DeviceMatrix xd = to_device(x, M, in), gd = to_device(g, M, out);
  UpdateParams params;
  params.seed = 0x5EEDu;
  params.lr = 0.05;
  for (const Precision precision : {Precision::fp32, Precision::int8}) {
    SCOPED_TRACE(precision_name(precision));
    const DeviceState by_default = to_device(start), whole = to_device(start);
    update_from_io(ExecSpace{}, by_default, xd, gd, params, precision);
    const DeviceMatrix all_rows("all_rows", out, in);
    update_from_io(ExecSpace{}, whole, xd, gd, params, all_rows, precision);
    const HostState a = to_host(by_default), b = to_host(whole);
    EXPECT_TRUE(same_state(a, b));
    EXPECT_FALSE(same_state(a, start));
  }
}

// The from_io cases, by their naming convention (io_*, *_io, *_io_*).
std::vector<std::string> from_io_names(const std::vector<std::string>& names) {
  std::vector<std::string> io;
  for (const auto& n : names) {
    if (n.starts_with("io_") || n.ends_with("_io") || n.find("_io_") != std::string::npos) {
      io.push_back(n);
    }
  }
  return io;
}

INSTANTIATE_TEST_SUITE_P(Small, FromIoWorkspace,
                         ::testing::ValuesIn(from_io_names(small_case_names())), CaseName{});
INSTANTIATE_TEST_SUITE_P(Large, FromIoWorkspace,
                         ::testing::ValuesIn(from_io_names(large_case_names())), CaseName{});
INSTANTIATE_TEST_SUITE_P(Small, RowSplits, ::testing::ValuesIn(small_case_names()), CaseName{});
INSTANTIATE_TEST_SUITE_P(Large, RowSplits, ::testing::ValuesIn(large_case_names()), CaseName{});

}  // namespace
}  // namespace TernaryCounter::Test
