// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// TernaryLinear: the initial draw from the base seed (a constructed layer learns), per-step seeds,
// the resume identity (save after N steps, load, M more steps == N + M steps straight, bit for
// bit; also with the layer checkpoints that store seed, step and params) and hyper-parameters
// changed between steps.
#include "Test_Common.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

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
  p.rms_beta = 0.9;
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

std::string temp_path(const std::string& file) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ternarycounter-linear-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / file).string();
}

// The ternary values of a host state.
std::vector<int> ternary_values(const PackedState<Kokkos::HostSpace>& state) {
  const auto codes = unpack_codes(state);
  std::vector<int> t;
  for (std::int64_t o = 0; o < state.out(); ++o) {
    for (std::int64_t i = 0; i < state.in(); ++i) t.push_back(decode_ternary(codes(o, i), state.C));
  }
  return t;
}

TEST(TernaryLinear, ConstructedLayerIsDrawnFromItsSeed) {
  constexpr std::int64_t wide = 64;
  TernaryLinear<ExecSpace> layer(ExecSpace{}, "layer", 32, wide, params(), 9u);
  const auto host = host_copy(layer);
  int count[3] = {0, 0, 0};
  for (const int t : ternary_values(host)) ++count[t + 1];
  for (const int c : count)
    EXPECT_GT(c, 32 * wide / 4) << "t is not about a third each of -1, 0, 1";
  EXPECT_EQ(init_scale(wide), float(1.0 / std::sqrt(2.0 * wide / 3.0)));
  for (std::int64_t o = 0; o < host.out(); ++o) {
    EXPECT_EQ(host.scale(o), init_scale(wide));
    EXPECT_EQ(host.v(o), 0.0f);
  }
  // The draw is randomize_ternary's with init_seed(base seed).
  PackedState<Kokkos::HostSpace> expected("expected", 32, wide, params().C);
  randomize_ternary(expected, init_seed(9u), init_scale(wide));
  EXPECT_TRUE(identical(host, expected));
  TernaryLinear<ExecSpace> other(ExecSpace{}, "other", 32, wide, params(), 10u);
  EXPECT_FALSE(identical(host, host_copy(other)));
  // A bare PackedState stays all zero.
  const PackedState<Kokkos::HostSpace> bare("bare", 4, 8, 8);
  for (const int t : ternary_values(bare)) EXPECT_EQ(t, 0);
}

// Layers that are only constructed, with the default UpdateParams, learn: a two-layer ReLU
// network (which an all-zero layer would never move: every gradient through it is zero) fits a
// fixed ternary teacher's outputs, the mean squared error on held-out inputs falls.
TEST(TernaryLinear, ConstructedLayersWithDefaultParamsLearn) {
  constexpr std::int64_t rows = 32, n_out = 8, n_hidden = 32, n_in = 32;
  const ExecSpace space;
  TernaryLinear<ExecSpace> teacher(space, "teacher", n_out, n_in, UpdateParams{}, 1u);
  TernaryLinear<ExecSpace> fc1(space, "fc1", n_hidden, n_in, UpdateParams{}, 2u);
  TernaryLinear<ExecSpace> fc2(space, "fc2", n_out, n_hidden, UpdateParams{}, 3u);
  Matrix pre("pre", rows, n_hidden), act("act", rows, n_hidden), y("y", rows, n_out);
  Matrix target("target", rows, n_out), grad("grad", rows, n_out);
  Matrix grad_act("grad_act", rows, n_hidden);
  const auto batch = [&](std::int64_t s) {
    auto x_h = Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace>("x", rows, n_in);
    for (std::int64_t k = 0; k < rows * n_in; ++k) x_h.data()[k] = data_value(s, 3, k);
    return Kokkos::create_mirror_view_and_copy(MemSpace{}, x_h);
  };
  // The mean squared error of x's batch; leaves its gradient with respect to y in grad.
  const auto loss = [&](const Matrix& x) {
    fc1.forward(x, pre);
    relu(space, pre, act);
    fc2.forward(act, y);
    teacher.forward(x, target);
    const auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, y);
    const auto t = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, target);
    double sum = 0;
    for (std::int64_t k = 0; k < rows * n_out; ++k) {
      g.data()[k] -= t.data()[k];
      sum += double(g.data()[k]) * g.data()[k];
      g.data()[k] /= float(rows);
    }
    Kokkos::deep_copy(grad, g);
    return sum / double(rows * n_out);
  };
  const Matrix held_out = batch(-1);
  const double before = loss(held_out);
  for (int s = 0; s < 300; ++s) {
    const Matrix x = batch(s);
    loss(x);
    fc2.backward_input(grad, grad_act);
    relu_backward(space, pre, grad_act);
    fc2.update_from_io(act, grad);
    fc1.update_from_io(x, grad_act);
  }
  const double after = loss(held_out);
  EXPECT_LT(after, 0.5 * before) << "before " << before << ", after " << after;
  std::printf("held-out MSE: %g before, %g after 300 steps\n", before, after);
}

// TernaryLinear checkpoints: N steps straight == N/2, save, load into fresh layers built with
// another seed and other params, N/2 more; the fresh layers take the saved seed, step and params.
TEST(TernaryLinear, LayerCheckpointResumesBitIdentically) {
  constexpr int N = 8;
  UpdateParams p = params();
  p.clip = 0.5;
  TernaryLinear<ExecSpace> straight(ExecSpace{}, "straight", out, in, p, 77u);
  for (int s = 0; s < N; ++s) train_step(straight);

  const std::string path = temp_path("layers.safetensors");
  {
    TernaryLinear<ExecSpace> first(ExecSpace{}, "first", out, in, p, 77u);
    TernaryLinear<ExecSpace> second(ExecSpace{}, "second", 4, in, p, 78u);
    for (int s = 0; s < N / 2; ++s) train_step(first);
    save_layers(path, {{"fc", first}, {"other", second}}, {{"note", "kept"}});
  }
  UpdateParams other = params();
  other.lr = 0.01;
  other.lr_scale = 0.0;
  other.team_size = 1;
  TernaryLinear<ExecSpace> resumed(ExecSpace{}, "resumed", out, in, other, 1234u);
  TernaryLinear<ExecSpace> resumed_other(ExecSpace{}, "resumed_other", 4, in, other, 1u);
  const Checkpoint c = load_layers(path, {{"fc", resumed}, {"other", resumed_other}});
  EXPECT_EQ(c.step, N / 2);
  EXPECT_EQ(c.metadata.at("note"), "kept");
  EXPECT_EQ(resumed.base_seed(), 77u);
  EXPECT_EQ(resumed_other.base_seed(), 78u);
  EXPECT_EQ(resumed.step(), N / 2);
  EXPECT_EQ(resumed_other.step(), 0);
  EXPECT_EQ(resumed.params().lr, p.lr);
  EXPECT_EQ(resumed.params().lr_scale, p.lr_scale);
  EXPECT_EQ(resumed.params().rms_beta, p.rms_beta);
  EXPECT_EQ(resumed.params().clip, p.clip);
  EXPECT_EQ(resumed.params().team_size, 1) << "a launch setting is the target's own";
  for (int s = 0; s < N / 2; ++s) train_step(resumed);
  EXPECT_TRUE(identical(host_copy(resumed), host_copy(straight)));
  std::filesystem::remove(path);
}

TEST(TernaryLinear, LayerCheckpointRefusalsChangeNothing) {
  const std::string path = temp_path("states.safetensors");
  TernaryLinear<ExecSpace> layer(ExecSpace{}, "layer", out, in, params(), 5u);
  // States of any memory space, the space deduced: a plain state checkpoint, no layer fields.
  save_layers(path, {{"fc", layer.state()}}, 3);
  TernaryLinear<ExecSpace> target(ExecSpace{}, "target", out, in, params(), 6u);
  const auto before = host_copy(target);
  try {
    load_layers(path, {{"fc", target}});
    ADD_FAILURE() << "loaded a layer without its seed, step and params";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("fc.base_seed"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(identical(before, host_copy(target)));
  EXPECT_EQ(target.base_seed(), 6u);
  // The states alone load into a state of another memory space.
  PackedState<Kokkos::HostSpace> host("host", out, in, params().C);
  EXPECT_EQ(load_layers(path, {{"fc", host}}).step, 3);
  EXPECT_TRUE(identical(host, host_copy(layer)));
  // A const layer saves but does not load.
  const TernaryLinear<ExecSpace>& constant = target;
  save_layers(path, {{"fc", constant}});
  EXPECT_THROW(load_layers(path, {{"fc", constant}}), std::invalid_argument);
  std::filesystem::remove(path);
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
