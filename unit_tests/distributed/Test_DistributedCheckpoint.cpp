// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Checkpoints of a data-parallel run: rank 0 writes, every rank reads; a failure on any rank is
// the same CheckpointError on all of them and changes no target.
#include "Test_DistributedHelpers.hpp"

#include <unistd.h>

#include <filesystem>

namespace TernaryCounter::Test {
namespace {

/// A path every rank agrees on (rank 0's process id names it).
std::string shared_path(const std::string& name) {
  long long id = getpid();
  MPI_Bcast(&id, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  return (std::filesystem::temp_directory_path() /
          ("ternarycounter_distributed_" + std::to_string(id) + "_" + name))
      .string();
}

TEST(DistributedCheckpoint, RankZeroWritesEveryRankReads) {
  const Dist::Communicator comm;
  const ExecSpace space;
  const std::string path = shared_path("save.safetensors");
  const State saved = random_state(6, 8, 8, 21);
  Dist::save_layers<MemSpace>(comm, path, {{"layer", saved}}, 42, {{"note", "x"}});
  State loaded("loaded", 6, 8, 8);
  const Checkpoint c = Dist::load_layers<MemSpace>(comm, path, {{"layer", loaded}});
  EXPECT_EQ(c.step, 42);
  EXPECT_EQ(c.metadata.at("note"), "x");
  EXPECT_TRUE(on_every_rank(identical(loaded, saved)));
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm.rank() == 0) std::filesystem::remove(path);
}

TEST(DistributedCheckpoint, AFailureOnOneRankFailsAllAndChangesNothing) {
  const Dist::Communicator comm;
  const ExecSpace space;
  const std::string path = shared_path("partial.safetensors");
  Dist::save_layers<MemSpace>(comm, path, {{"layer", random_state(6, 8, 8, 21)}}, 1);
  // The last rank's target has another shape: its read fails, so no rank may load.
  const bool odd_one = comm.size() > 1 && comm.rank() == comm.size() - 1;
  State target = random_state(odd_one ? 7 : 6, 8, 8, 5);
  const State before = create_mirror_and_copy(space, target);
  std::string message;
  try {
    Dist::load_layers<MemSpace>(comm, path, {{"layer", target}});
  } catch (const CheckpointError& e) {
    message = e.what();
  }
  if (comm.size() > 1) {
    EXPECT_NE(message.find("TernaryCounter::Distributed::load_layers: rank " +
                           std::to_string(comm.size() - 1)),
              std::string::npos)
        << message;
    EXPECT_TRUE(same_on_every_rank(message));
    EXPECT_TRUE(on_every_rank(identical(target, before)));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm.rank() == 0) std::filesystem::remove(path);
}

TEST(DistributedCheckpoint, UnwritablePathFailsOnEveryRank) {
  const Dist::Communicator comm;
  std::string message;
  try {
    Dist::save_layers<MemSpace>(comm, "/nonexistent_dir/x.safetensors",
                                {{"layer", random_state(2, 4, 8, 1)}}, 0);
  } catch (const CheckpointError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("TernaryCounter::Distributed::save_layers: rank 0: "), std::string::npos)
      << message;
  EXPECT_TRUE(same_on_every_rank(message));
}

}  // namespace
}  // namespace TernaryCounter::Test
