// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The sharded update against one process: for every rank count, split of the samples (uneven
// and empty ones too) and layer shape (fewer rows than ranks too), the state after several
// steps is bit-identical to update_from_io on all samples in one process.
#include "Test_DistributedHelpers.hpp"

#include <bit>
#include <cmath>
#include <limits>

namespace TernaryCounter::Test {
namespace {

struct Split {
  const char* name;
  Dist::Block (*mine)(std::int64_t m, int rank, int size);  ///< a rank's samples
};

const Split splits[] = {
    {"even", [](std::int64_t m, int r, int n) { return Dist::block(m, r, n); }},
    // Quadratic: rank 0 gets the fewest samples (none for small m), the last rank the most.
    {"skewed",
     [](std::int64_t m, int r, int n) {
       const std::int64_t nn = std::int64_t(n) * n;
       return Dist::Block{m * r * r / nn, m * (r + 1) * (r + 1) / nn};
     }},
    // Every sample on the last rank.
    {"last_only",
     [](std::int64_t m, int r, int n) {
       return r == n - 1 ? Dist::Block{0, m} : Dist::Block{};
     }},
};

void check_against_one_process(std::int64_t out, std::int64_t in, std::int64_t m,
                               UpdateParams params, bool poison_a_row,
                               Precision precision = Precision::fp32) {
  const Dist::Communicator comm;
  const ExecSpace space;
  for (const Split& split : splits) {
    SCOPED_TRACE(std::string("split ") + split.name + ", " + std::to_string(out) + "x" +
                 std::to_string(in) + " M=" + std::to_string(m));
    State reference = random_state(out, in, params.C, 11);
    State sharded = create_mirror_and_copy(space, reference);
    Dist::UpdateWorkspace<MemSpace> workspace;
    for (std::uint32_t step = 0; step < 3; ++step) {
      const Matrix x = hashed_matrix("x", m, in, 100 + step, 1.5f);
      const Matrix grad_out = hashed_matrix("grad_out", m, out, 200 + step, 0.1f);
      if (poison_a_row && step == 1) {
        // A non-finite gradient in one output row: that row is skipped (and counted) alike.
        const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, grad_out);
        h(m / 2, out / 2) = std::numeric_limits<float>::quiet_NaN();
        Kokkos::deep_copy(grad_out, h);
      }
      params.seed = 1000 + step;
      const UpdateReport one = update_from_io(space, reference, x, grad_out, params, precision);

      const Dist::Block mine = split.mine(m, comm.rank(), comm.size());
      const UpdateReport many = Dist::update_from_io(
          comm, space, sharded, rows_of(x, mine.first, mine.last),
          rows_of(grad_out, mine.first, mine.last), params, workspace, precision);
      EXPECT_EQ(many.skipped_rows, one.skipped_rows) << "step " << step;
      if (poison_a_row && step == 1) EXPECT_GE(one.skipped_rows, 1);
      ASSERT_TRUE(on_every_rank(identical(sharded, reference)))
          << "the sharded state differs from one process's after step " << step;
    }
  }
}

TEST(DistributedUpdate, BitIdenticalToOneProcess) {
  UpdateParams p;
  p.C = 8;
  p.lr = 0.3;  // many ticks per step, so a wrong sample order would show
  p.lr_scale = 1e-2;
  p.rms_beta = 0.9;
  check_against_one_process(37, 24, 29, p, false);
}

TEST(DistributedUpdate, LaggedClippedAndSkippedRows) {
  UpdateParams p;
  p.C = 5;
  p.lr = 0.5;
  p.lr_scale = 2e-4;
  p.rms_beta = 0.9;
  p.clip = 0.05;
  p.lagged = true;
  p.row_offset = 3;  // a shard of a bigger layer
  check_against_one_process(21, 16, 17, p, true);
}

TEST(DistributedUpdate, FewerRowsThanRanks) {
  UpdateParams p;
  p.lr = 0.4;
  p.lr_scale = 2e-4;
  p.rms_beta = 0.9;
  check_against_one_process(2, 8, 9, p, false);
}

TEST(DistributedUpdate, TernaryLinearMatchesOneProcess) {
  const Dist::Communicator comm;
  const ExecSpace space;
  UpdateParams p;
  p.lr = 0.25;
  p.lr_scale = 2e-4;
  p.rms_beta = 0.9;
  TernaryLinear<ExecSpace> one(space, "one", 12, 20, p, 77);
  Dist::TernaryLinear<ExecSpace> many(comm, space, "many", 12, 20, p, 77);
  randomize_ternary(one.state(), 5, 0.3f);
  randomize_ternary(many.state(), 5, 0.3f);
  const std::int64_t m = 23;
  for (int step = 0; step < 4; ++step) {
    const Matrix x = hashed_matrix("x", m, 20, 300 + step, 1.0f);
    const Matrix g = hashed_matrix("g", m, 12, 400 + step, 0.2f);
    const Dist::Block mine = Dist::block(m, comm.rank(), comm.size());
    one.update_from_io(x, g);
    many.update_from_io(rows_of(x, mine.first, mine.last), rows_of(g, mine.first, mine.last));
    ASSERT_EQ(many.step(), one.step());
    ASSERT_TRUE(on_every_rank(identical(many.state(), one.state()))) << "step " << step;
  }
}

// The integer path (SPEC §7): global absmax by a max, the streams on the global batch, int32
// partial sums reduce-scattered by rows. The same splits and shapes as FP32.
TEST(DistributedUpdate, Int8BitIdenticalToOneProcess) {
  UpdateParams p;
  p.C = 8;
  p.lr = 0.3;
  p.lr_scale = 1e-2;
  p.rms_beta = 0.9;
  check_against_one_process(37, 24, 29, p, false, Precision::int8);
}

TEST(DistributedUpdate, Int8LaggedClippedAndSkippedRows) {
  UpdateParams p;
  p.C = 5;
  p.lr = 0.5;
  p.lr_scale = 2e-4;
  p.rms_beta = 0.9;
  p.clip = 0.05;
  p.lagged = true;
  p.row_offset = 3;
  check_against_one_process(21, 16, 17, p, true, Precision::int8);
}

TEST(DistributedUpdate, Int8FewerRowsThanRanks) {
  UpdateParams p;
  p.lr = 0.4;
  p.lr_scale = 2e-4;
  p.rms_beta = 0.9;
  check_against_one_process(2, 8, 9, p, false, Precision::int8);
}

// A workspace budget of a few rows: the sums move in many rounds of one row per rank.
TEST(DistributedUpdate, Int8ManyRounds) {
  UpdateParams p;
  p.lr = 0.3;
  p.lr_scale = 1e-2;
  p.rms_beta = 0.9;
  p.workspace_bytes = 4 * 24;
  check_against_one_process(37, 24, 29, p, true, Precision::int8);
}

// Wider than the hosts' 128-column quantizer blocks, so its vector loops run too.
TEST(DistributedUpdate, Int8WideLayer) {
  UpdateParams p;
  p.lr = 0.3;
  p.lr_scale = 2e-4;
  p.rms_beta = 0.9;
  check_against_one_process(130, 260, 70, p, false, Precision::int8);
}

TEST(DistributedUpdate, Int8TernaryLinearMatchesOneProcess) {
  const Dist::Communicator comm;
  const ExecSpace space;
  UpdateParams p;
  p.lr = 0.25;
  p.lr_scale = 2e-4;
  p.rms_beta = 0.9;
  TernaryLinear<ExecSpace> one(space, "one", 12, 20, p, 77, Precision::int8);
  Dist::TernaryLinear<ExecSpace> many(comm, space, "many", 12, 20, p, 77, Precision::int8);
  randomize_ternary(one.state(), 5, 0.3f);
  randomize_ternary(many.state(), 5, 0.3f);
  const std::int64_t m = 23;
  for (int step = 0; step < 4; ++step) {
    const Matrix x = hashed_matrix("x", m, 20, 300 + step, 1.0f);
    const Matrix g = hashed_matrix("g", m, 12, 400 + step, 0.2f);
    // Uneven: rank r holds about (r + 1) shares.
    const std::int64_t n = comm.size(), shares = n * (n + 1) / 2, r = comm.rank();
    const Dist::Block mine{m * (r * (r + 1) / 2) / shares, m * ((r + 1) * (r + 2) / 2) / shares};
    const Matrix gx_one("gx_one", m, 20), gx_many("gx_many", mine.size(), 20);
    one.backward_input(g, gx_one);
    many.backward_input(rows_of(g, mine.first, mine.last), gx_many);
    const auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, gx_one);
    const auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, gx_many);
    bool same_grad_x = true;
    for (std::int64_t s = 0; s < mine.size(); ++s) {
      for (int i = 0; i < 20; ++i) {
        same_grad_x = same_grad_x && std::bit_cast<std::uint32_t>(a(mine.first + s, i)) ==
                                         std::bit_cast<std::uint32_t>(b(s, i));
      }
    }
    EXPECT_TRUE(on_every_rank(same_grad_x)) << "grad_x, step " << step;
    one.update_from_io(x, g);
    many.update_from_io(rows_of(x, mine.first, mine.last), rows_of(g, mine.first, mine.last));
    ASSERT_EQ(many.step(), one.step());
    ASSERT_TRUE(on_every_rank(identical(many.state(), one.state()))) << "step " << step;
  }
}

// The int8 traffic counted on the Communicator agrees with the model within 5% and does not
// depend on the batch; one rank sends nothing.
TEST(DistributedUpdate, Int8BytesCountedMatchTheModel) {
  const Dist::Communicator comm;
  const ExecSpace space;
  UpdateParams p;
  p.lr = 0.3;
  p.lr_scale = 2e-4;
  const std::int64_t out = 96, in = 128;
  State state = random_state(out, in, p.C, 3);
  Dist::UpdateWorkspace<MemSpace> workspace;
  std::int64_t counted[3] = {};
  for (int k = 0; k < 3; ++k) {
    const std::int64_t m = k == 0 ? 8 : 64;
    p.workspace_bytes = k == 2 ? 4 * in : 0;  // k = 2: one row per rank and round
    const Matrix x = hashed_matrix("x", m, in, 7, 1.0f);
    const Matrix g = hashed_matrix("g", m, out, 8, 0.1f);
    const Dist::Block mine = Dist::block(m, comm.rank(), comm.size());
    comm.reset_bytes_sent();
    Dist::update_from_io(comm, space, state, rows_of(x, mine.first, mine.last),
                         rows_of(g, mine.first, mine.last), p, workspace, Precision::int8);
    counted[k] = comm.bytes_sent();
  }
  EXPECT_EQ(counted[0], counted[1]) << "the traffic depends on the batch";
  EXPECT_EQ(counted[0], counted[2]) << "the traffic depends on the rounds";
  const double model = Dist::integer_update_bytes_sent_per_rank(out, in, comm.size());
  if (comm.size() == 1) {
    EXPECT_EQ(counted[0], 0);
    EXPECT_EQ(model, 0.0);
  } else {
    EXPECT_NEAR(double(counted[0]), model, 0.05 * model);
    EXPECT_LE(model, 5.0 * double(out * in));
  }
}

// M's bound (int32 sums) holds for the global batch: ranks whose own blocks are small still
// all refuse, with the same message, and nothing changes.
TEST(DistributedUpdate, Int8GlobalBatchBound) {
  const Dist::Communicator comm;
  const ExecSpace space;
  UpdateParams p;
  const std::int64_t m = 133145, in = 4, out = 4;
  State state = random_state(out, in, p.C, 3);
  State before = create_mirror_and_copy(space, state);
  const Dist::Block mine = Dist::block(m, comm.rank(), comm.size());
  const Matrix x("x", mine.size(), in), g("g", mine.size(), out);
  std::string message;
  try {
    Dist::update_from_io(comm, space, state, x, g, p, Precision::int8);
  } catch (const std::invalid_argument& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("133144"), std::string::npos) << message;
  EXPECT_TRUE(same_on_every_rank(message));
  EXPECT_TRUE(on_every_rank(identical(state, before)));
}

TEST(DistributedUpdate, BlocksCoverInOrder) {
  for (const std::int64_t n : {0, 1, 5, 37, 1000003}) {
    for (int size = 1; size <= 9; ++size) {
      std::int64_t next = 0;
      for (int r = 0; r < size; ++r) {
        const Dist::Block b = Dist::block(n, r, size);
        EXPECT_EQ(b.first, next);
        EXPECT_LE(b.size(), n / size + 1);
        EXPECT_GE(b.size(), n / size);
        next = b.last;
      }
      EXPECT_EQ(next, n);
    }
  }
  EXPECT_THROW(Dist::block(5, 2, 2), std::invalid_argument);
}

// Device buffers go through NCCL only in builds with it and, there, only when no two ranks share
// a GPU (NCCL refuses that; a one-GPU machine with two ranks takes the host path). Every rank
// must come to the same answer, and asking for the NCCL communicator otherwise must throw.
TEST(DistributedUpdate, RanksAgreeWhetherTheyUseNccl) {
  const Dist::Communicator comm;
  const bool uses = comm.uses_nccl();
  EXPECT_TRUE(!uses || Dist::Communicator::with_nccl());
  int mine = uses ? 1 : 0, least = 0, most = 0;
  MPI_Allreduce(&mine, &least, 1, MPI_INT, MPI_MIN, comm.mpi());
  MPI_Allreduce(&mine, &most, 1, MPI_INT, MPI_MAX, comm.mpi());
  EXPECT_EQ(least, most);
  if (!uses) EXPECT_THROW(comm.nccl(), std::runtime_error);
}

}  // namespace
}  // namespace TernaryCounter::Test
