// SPEC §4: the same bits for every team size and every row split (rows updated in separate calls
// on subviews with params.row_offset), and for from_io every workspace size.
#include "Test_Helpers.hpp"

namespace TernaryCounter::Test {
namespace {

class RowSplits : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { TERNARYCOUNTER_SKIP_IF_CASE_ABSENT(GetParam()); }
};

TEST(TeamSizes, BackendAcceptsTheSizesItShould) {
  const auto sizes = valid_team_sizes(256);
  std::string list;
  for (int t : sizes) list += " " + std::to_string(t);
  RecordProperty("team_sizes", list);
  std::cout << "[ team sizes tested on " << ExecSpace::name() << ":" << list << " ]\n";
  const auto accepted = [&](int t) {
    return std::find(sizes.begin(), sizes.end(), t) != sizes.end();
  };
  EXPECT_TRUE(accepted(0));
  EXPECT_TRUE(accepted(1));
  if (Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible) {
    // Host teams are threads of the pool: every size up to the pool size must run.
    for (int t : team_size_candidates()) {
      EXPECT_EQ(accepted(t), t <= ExecSpace().concurrency()) << "team_size " << t;
    }
  } else {
    for (int t : {32, 64, 128, 256}) EXPECT_TRUE(accepted(t)) << "team_size " << t;
  }
}

// The bigger from_io cases are too slow to run in one-row calls: each call computes whole
// gradient tiles (96 rows on host backends) over all of M, and without -march the host fma is a
// libm call. They get uneven multi-row splits; io_basic_c11 and spec_nonfinite_io take 1 and 7.
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

// The from_io cases, by their naming convention (io_*, *_io).
std::vector<std::string> from_io_names(const std::vector<std::string>& names) {
  std::vector<std::string> io;
  for (const auto& n : names) {
    if (n.starts_with("io_") || n.ends_with("_io")) io.push_back(n);
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
