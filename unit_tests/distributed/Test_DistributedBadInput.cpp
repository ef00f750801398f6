// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Bad input to the collective calls: one rank with a bad argument, or ranks that disagree, make
// every rank throw the same error; nothing hangs and no rank's state changes.
#include "Test_DistributedHelpers.hpp"

#include <functional>

namespace TernaryCounter::Test {
namespace {

struct Inputs {
  State state;
  Matrix x, grad_out;
  UpdateParams params;
  Precision precision = Precision::fp32;
};

/// Every rank runs `call` on inputs that `spoil` may change on the last rank only; every rank
/// must throw std::invalid_argument with one text containing `expected`, and keep its state.
void expect_same_error_everywhere(const std::function<void(Inputs&)>& spoil,
                                  const std::string& expected) {
  const Dist::Communicator comm;
  const ExecSpace space;
  Inputs in{random_state(16, 12, 8, 3), hashed_matrix("x", 5, 12, 1, 1.0f),
            hashed_matrix("grad_out", 5, 16, 2, 0.1f), UpdateParams{}};
  in.params.seed = 9;
  in.params.lr = 0.05;
  if (comm.rank() == comm.size() - 1) spoil(in);
  const State before = create_mirror_and_copy(space, in.state);
  std::string message;
  try {
    Dist::update_from_io(comm, space, in.state, in.x, in.grad_out, in.params, in.precision);
  } catch (const std::invalid_argument& e) {
    message = e.what();
  }
  EXPECT_NE(message.find(expected), std::string::npos) << "message: " << message;
  EXPECT_NE(message.find("TernaryCounter::Distributed::update_from_io"), std::string::npos);
  EXPECT_TRUE(same_on_every_rank(message)) << "message: " << message;
  EXPECT_TRUE(on_every_rank(identical(in.state, before))) << "a state changed";
}

TEST(DistributedBadInput, OneRankWithBadExtents) {
  expect_same_error_everywhere(
      [](Inputs& in) { in.grad_out = hashed_matrix("grad_out", 4, 16, 2, 0.1f); },
      "grad_out_local.extent(0) is 4 but x_local.extent(0) is 5");
}

TEST(DistributedBadInput, OneRankWithInvalidParams) {
  expect_same_error_everywhere([](Inputs& in) { in.params.lr = -1.0; }, "lr");
}

TEST(DistributedBadInput, RanksDisagreeOnShape) {
  if (Dist::Communicator().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  expect_same_error_everywhere(
      [](Inputs& in) {
        in.state = random_state(16, 16, 8, 3);
        in.x = hashed_matrix("x", 5, 16, 1, 1.0f);
      },
      "the ranks disagree on the state's in: rank 0 has 12 but rank");
}

TEST(DistributedBadInput, RanksDisagreeOnC) {
  if (Dist::Communicator().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  expect_same_error_everywhere(
      [](Inputs& in) {
        in.state = random_state(16, 12, 5, 3);
        in.params.C = 5;
      },
      "the ranks disagree on the state's C: rank 0 has 8 but rank");
}

TEST(DistributedBadInput, RanksDisagreeOnSeed) {
  if (Dist::Communicator().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  expect_same_error_everywhere([](Inputs& in) { in.params.seed = 10; },
                               "the ranks disagree on params.seed: rank 0 has 9 but rank");
}

TEST(DistributedBadInput, RanksDisagreeOnParams) {
  if (Dist::Communicator().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  expect_same_error_everywhere([](Inputs& in) { in.params.lr = 0.5; },
                               "the ranks disagree on params.lr: rank 0 has 0.05");
}

// A rank on the other precision would take the other collective route (int8 reduce-scatter,
// FP32 all-gather) and leave the others waiting: it is refused before anything moves.
TEST(DistributedBadInput, RanksDisagreeOnPrecision) {
  if (Dist::Communicator().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  expect_same_error_everywhere([](Inputs& in) { in.precision = Precision::int8; },
                               "the ranks disagree on precision: rank 0 has 0 but rank");
}

TEST(DistributedBadInput, LayersDisagreeOnStep) {
  const Dist::Communicator comm;
  if (comm.size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const ExecSpace space;
  Dist::TernaryLinear<ExecSpace> layer(comm, space, "layer", 8, 8, UpdateParams{}, 4);
  if (comm.rank() == 1) layer.set_step(3);
  const State before = create_mirror_and_copy(space, layer.state());
  const std::int64_t step = layer.step();
  std::string message;
  try {
    layer.update_from_io(hashed_matrix("x", 2, 8, 1, 1.0f), hashed_matrix("g", 2, 8, 2, 1.0f));
  } catch (const std::invalid_argument& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("the ranks disagree on params.seed"), std::string::npos) << message;
  EXPECT_TRUE(same_on_every_rank(message));
  EXPECT_EQ(layer.step(), step) << "the step advanced after a failed update";
  EXPECT_TRUE(on_every_rank(identical(layer.state(), before)));
}

// Settings compared at start-up: a differing value, a name one rank lacks, or a local error on
// one rank make every rank throw the same text naming the setting and the ranks.
TEST(DistributedBadInput, SettingsAgreement) {
  const Dist::Communicator comm;
  const bool last = comm.rank() == comm.size() - 1;
  const auto message_of = [&](const std::string& error, const Dist::Settings& settings) {
    try {
      Dist::agree_on_settings(comm, "program", error, settings);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const Dist::Settings same = {{"--batch", "256"}, {"data x", "10 bytes, CRC-32C 01234567"}};
  EXPECT_EQ(message_of("", same), "");
  if (comm.size() == 1) return;
  const std::string last_rank = std::to_string(comm.size() - 1);
  Dist::Settings other = same;
  if (last) other[0].second = "257";
  std::string message = message_of("", other);
  EXPECT_EQ(message, "program: the ranks disagree on --batch: rank 0 has '256' but rank " +
                         last_rank + " has '257'");
  EXPECT_TRUE(same_on_every_rank(message)) << message;
  Dist::Settings fewer = same;
  if (last) fewer.pop_back();
  message = message_of("", fewer);
  EXPECT_NE(message.find("disagree on data x: rank 0 has '10 bytes, CRC-32C 01234567' but rank " +
                         last_rank + " has (not set)"),
            std::string::npos)
      << message;
  EXPECT_TRUE(same_on_every_rank(message)) << message;
  message = message_of(last ? "unknown option --x" : "", same);
  EXPECT_EQ(message, "program: rank " + last_rank + ": unknown option --x");
  EXPECT_TRUE(same_on_every_rank(message)) << message;
}

}  // namespace
}  // namespace TernaryCounter::Test
