// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// TernaryLinear: per-step seeds, the resume identity (save after N steps, load, M more
// steps == N + M steps straight, bit for bit) and hyper-parameters changed between steps.
#include "Test_Common.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>

namespace TernaryCounter::Test {
namespace {

using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, MemSpace>;

constexpr std::int64_t M = 6, out = 8, in = 16;

float data_value(std::int64_t step, std::uint32_t what, std::int64_t index) {
  const std::uint32_t h =
      hash_u32(std::uint32_t(step) * 7919u ^ hash_u32(what) ^ hash_u32(std::uint32_t(index)));
  return float(h & 0xFFFF) / 32768.0f - 1.0f;
}

// One training step: forward, an MSE-like output gradient y - target, backward_input, update.
void train_step(TernaryLinear<ExecSpace>& layer) {
  const std::int64_t s = layer.step();
  auto x_h = Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace>("x", M, in);
  for (std::int64_t k = 0; k < M * in; ++k) x_h.data()[k] = data_value(s, 1, k);
  const auto x = Kokkos::create_mirror_view_and_copy(MemSpace{}, x_h);
  Matrix y("y", M, out), grad_x("grad_x", M, in);
  layer.forward(x, y);
  auto g_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, y);
  for (std::int64_t k = 0; k < M * out; ++k) g_h.data()[k] -= data_value(s, 2, k);
  const auto g = Kokkos::create_mirror_view_and_copy(MemSpace{}, g_h);
  layer.backward_input(g, grad_x);
  layer.update_from_io(x, g);
}

UpdateParams params() {
  UpdateParams p;
  p.C = 4;
  p.lr = 0.5;
  p.lr_scale = 1e-2;
  return p;
}

PackedState<Kokkos::HostSpace> host_copy(const TernaryLinear<ExecSpace>& layer) {
  return create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, layer.state());
}

bool identical(const PackedState<Kokkos::HostSpace>& a, const PackedState<Kokkos::HostSpace>& b) {
  return a.codes.span() == b.codes.span() &&
         std::memcmp(a.codes.data(), b.codes.data(), a.codes.span()) == 0 &&
         std::memcmp(a.scale.data(), b.scale.data(), 4 * a.scale.span()) == 0 &&
         std::memcmp(a.v.data(), b.v.data(), 4 * a.v.span()) == 0;
}

TEST(TernaryLinear, StepSeedFollowsTheDocumentedFormula) {
  EXPECT_EQ(TernaryLinear<ExecSpace>::step_seed(123u, 5), hash_u32(123u ^ hash_u32(5u)));
  TernaryLinear<ExecSpace> layer(ExecSpace{}, "layer", out, in, params(), 9u);
  EXPECT_EQ(layer.step(), 0);
  train_step(layer);
  EXPECT_EQ(layer.step(), 1);
}

TEST(TernaryLinear, ResumeFromCheckpointIsBitIdenticalToStraightRun) {
  constexpr int N = 6, K = 5;
  TernaryLinear<ExecSpace> straight(ExecSpace{}, "straight", out, in, params(), 77u);
  randomize_ternary(straight.state(), 5u, 0.5f);
  const auto initial = host_copy(straight);
  for (int s = 0; s < N + K; ++s) train_step(straight);
  EXPECT_FALSE(identical(initial, host_copy(straight))) << "training changed nothing";

  const auto dir = std::filesystem::temp_directory_path() /
                   ("ternarycounter-resume-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "layer.safetensors").string();
  {
    TernaryLinear<ExecSpace> first(ExecSpace{}, "first", out, in, params(), 77u);
    randomize_ternary(first.state(), 5u, 0.5f);
    for (int s = 0; s < N; ++s) train_step(first);
    save_layers<MemSpace>(path, {{"fc", first.state()}}, first.step());
  }
  TernaryLinear<ExecSpace> resumed(ExecSpace{}, "resumed", out, in, params(), 77u);
  const Checkpoint c = load_layers<MemSpace>(path, {{"fc", resumed.state()}});
  resumed.set_step(c.step);
  EXPECT_EQ(resumed.step(), N);
  for (int s = 0; s < K; ++s) train_step(resumed);
  EXPECT_EQ(resumed.step(), straight.step());
  EXPECT_TRUE(identical(host_copy(resumed), host_copy(straight)));
  std::filesystem::remove_all(dir);
}

// A learning-rate schedule: after set_lr / set_lr_scale the next steps are those of a layer built
// with the new values (from the same state and step), and differ from keeping the old ones.
TEST(TernaryLinear, SettersChangeTheNextStepsLikeALayerBuiltWithTheNewParams) {
  constexpr int N = 3, K = 3;
  TernaryLinear<ExecSpace> scheduled(ExecSpace{}, "scheduled", out, in, params(), 21u);
  TernaryLinear<ExecSpace> constant(ExecSpace{}, "constant", out, in, params(), 21u);
  randomize_ternary(scheduled.state(), 3u, 0.5f);
  randomize_ternary(constant.state(), 3u, 0.5f);
  for (int s = 0; s < N; ++s) {
    train_step(scheduled);
    train_step(constant);
  }
  UpdateParams later = params();
  later.lr = 0.125;
  later.lr_scale = 2e-3;
  TernaryLinear<ExecSpace> built(ExecSpace{}, "built", out, in, later, 21u);
  TernaryCounter::deep_copy(built.state(), scheduled.state());
  built.set_step(scheduled.step());

  scheduled.set_lr(later.lr);
  scheduled.set_lr_scale(later.lr_scale);
  EXPECT_EQ(scheduled.params().lr, later.lr);
  EXPECT_EQ(scheduled.params().lr_scale, later.lr_scale);
  for (int s = 0; s < K; ++s) {
    train_step(scheduled);
    train_step(constant);
    train_step(built);
  }
  EXPECT_TRUE(identical(host_copy(scheduled), host_copy(built)));
  EXPECT_FALSE(identical(host_copy(scheduled), host_copy(constant))) << "the setters did nothing";
}

TEST(TernaryLinear, SettersRejectBadValuesAndChangeNothing) {
  TernaryLinear<ExecSpace> layer(ExecSpace{}, "layer", out, in, params(), 1u);
  const auto expect_rejected = [&](const std::function<void()>& call, const std::string& words) {
    try {
      call();
      ADD_FAILURE() << "accepted: " << words;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
    EXPECT_EQ(layer.params().lr, params().lr);
    EXPECT_EQ(layer.params().lr_scale, params().lr_scale);
    EXPECT_EQ(layer.params().C, params().C);
  };
  expect_rejected([&] { layer.set_lr(-1.0); }, "lr = -1");
  expect_rejected([&] { layer.set_lr(1e39); }, "lr = 1e+39");
  expect_rejected([&] { layer.set_lr_scale(std::nan("")); }, "lr_scale = nan");
  UpdateParams other_depth = params();
  other_depth.C = 5;
  expect_rejected([&] { layer.set_params(other_depth); },
                  "params.C = 5 but the layer's state has C = 4");
}

}  // namespace
}  // namespace TernaryCounter::Test
