// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Learning: a ternary layer trained from IO (update_from_io) against a fixed ternary teacher on
// synthetic data recovers the teacher's signs and cuts the held-out loss by 10x.
//
// Setup: teacher W_T[o,i] = s_T[o] * t_T[o,i], t_T uniform over {-1, 0, +1}; inputs x with i.i.d.
// entries uniform in [-sqrt(3), sqrt(3)) (unit variance); targets y_T = W_T x. The student starts
// as a fresh PackedState (t = 0, c = 0, scale 1, v 0). Each step draws a new batch, runs the
// student forward on the host (y_S = W_S x with W_S = scale * t read back from MemSpace), and
// updates from IO with grad_out = dL/dy_S of the training loss L = 1/(2M) sum_m sum_o (y_S-y_T)^2,
// i.e. grad_out = (y_S - y_T) / M. x and grad_out are copied to MemSpace for the update.
//
// Measures (on the final student):
//  - held-out loss: mean over a fixed held-out batch and all outputs of (y_S - y_T)^2; the start
//    value is that of the fresh student (W_S = 0, so it is the mean of y_T^2);
//  - sign recovery: over the teacher's nonzero weights, the fraction with t_S == t_T (a student
//    zero counts as a miss).
#include "Test_Helpers.hpp"

#include <cstdio>
#include <tuple>

namespace TernaryCounter::Test {
namespace {

struct Layer {
  std::int64_t out, in;
  std::vector<float> w;  // [out * in] effective weights
};

// y[m, o] = sum_i w[o, i] x[m, i] in double (the test's forward pass; its rounding is not under
// test, only the update is).
std::vector<float> forward(const Layer& l, const std::vector<float>& x, std::int64_t M) {
  std::vector<float> y(M * l.out);
  for (std::int64_t m = 0; m < M; ++m) {
    const float* xm = &x[m * l.in];
    for (std::int64_t o = 0; o < l.out; ++o) {
      const float* wo = &l.w[o * l.in];
      double acc = 0;
      for (std::int64_t i = 0; i < l.in; ++i) acc += double(wo[i]) * xm[i];
      y[m * l.out + o] = float(acc);
    }
  }
  return y;
}

std::vector<float> random_inputs(std::int64_t M, std::int64_t in, SplitMix64& rng) {
  std::vector<float> x(M * in);
  for (float& e : x) e = rng.uniform(-1.7320508f, 1.7320508f);
  return x;
}

double mse(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t j = 0; j < a.size(); ++j) s += (double(a[j]) - b[j]) * (double(a[j]) - b[j]);
  return a.empty() ? 0 : s / double(a.size());
}

TEST(Learning, StudentRecoversTernaryTeacherFromIO) {
  const std::int64_t out = 64, in = 256;
  // Hyper-parameters (tried on OpenMP and Serial; all land near an exact recovery by step 200):
  //  - lr decays linearly 0.05 -> 0.005. A constant 0.05 also passes (loss / 950 after 300 steps)
  //    but a constant 0.2 does not (loss / 9): inside a ternary value's dead zone a counter feels
  //    only gradient noise, which the RMS normalisation keeps at O(lr) per step, so a large late
  //    lr random-walks counters into spurious flips.
  //  - lr_scale = 0.01, not the default 2e-4: the student starts at scale 1 and the teacher's rows
  //    are 0.3-0.6; with 2e-4 the scale moves ~0.2% per step and after 200 steps the student
  //    has not learned (loss / 0.9, 46% signs).
  const std::int64_t M = 128;
  const int steps = 200;
  const int C = 8;
  const double lr0 = 0.05, lr_end = 0.005, lr_scale = 0.01;

  SplitMix64 rng(2024);
  // Teacher.
  std::vector<int> t_teacher(out * in);
  Layer teacher{out, in, std::vector<float>(out * in)};
  for (std::int64_t o = 0; o < out; ++o) {
    const float s = rng.uniform(0.3f, 0.6f);
    for (std::int64_t i = 0; i < in; ++i) {
      t_teacher[o * in + i] = rng.below(3) - 1;
      teacher.w[o * in + i] = s * float(t_teacher[o * in + i]);
    }
  }
  SplitMix64 held_rng(99);
  const std::int64_t M_held = 512;
  const std::vector<float> x_held = random_inputs(M_held, in, held_rng);
  const std::vector<float> y_held = forward(teacher, x_held, M_held);

  // Student.
  const DeviceState state("student", out, in, C);
  auto h_codes = Kokkos::create_mirror_view(state.codes);
  auto h_scale = Kokkos::create_mirror_view(state.scale);
  const auto student = [&]() {
    Kokkos::deep_copy(h_codes, state.codes);
    Kokkos::deep_copy(h_scale, state.scale);
    Layer l{out, in, std::vector<float>(out * in)};
    std::vector<int> t(out * in);
    for (std::int64_t o = 0; o < out; ++o) {
      for (std::int64_t g = 0; g < in / 4; ++g) {
        const std::uint32_t word = load_group(&h_codes(o, 3 * g));
        for (int lane = 0; lane < 4; ++lane) {
          const std::int64_t e = o * in + 4 * g + lane;
          t[e] = decode_ternary(group_code(word, lane), C);
          l.w[e] = h_scale(o) * float(t[e]);
        }
      }
    }
    return std::make_pair(l, t);
  };
  const auto report = [&]() {
    const auto [l, t] = student();
    std::int64_t nonzero = 0, recovered = 0;
    for (std::size_t e = 0; e < t.size(); ++e) {
      if (t_teacher[e] == 0) continue;
      ++nonzero;
      recovered += t[e] == t_teacher[e];
    }
    const double loss = mse(forward(l, x_held, M_held), y_held);
    return std::make_tuple(loss, double(recovered) / double(nonzero));
  };

  const auto [loss0, signs0] = report();
  DeviceMatrix x_d("x", M, in), go_d("grad_out", M, out);
  auto x_h = Kokkos::create_mirror_view(x_d);
  auto go_h = Kokkos::create_mirror_view(go_d);
  UpdateParams p;
  p.C = C;
  p.lr = 0.05;
  p.lr_scale = lr_scale;
  p.rms_beta = 0.9;
  for (int step = 0; step < steps; ++step) {
    const std::vector<float> x = random_inputs(M, in, rng);
    const std::vector<float> y_t = forward(teacher, x, M);
    const std::vector<float> y_s = forward(student().first, x, M);
    for (std::int64_t m = 0; m < M; ++m) {
      for (std::int64_t i = 0; i < in; ++i) x_h(m, i) = x[m * in + i];
      for (std::int64_t o = 0; o < out; ++o) {
        go_h(m, o) = (y_s[m * out + o] - y_t[m * out + o]) / float(M);
      }
    }
    Kokkos::deep_copy(x_d, x_h);
    Kokkos::deep_copy(go_d, go_h);
    // Linear decay of lr: a counter inside the dead zone of its ternary value gets no restoring
    // force, only noise, so a smaller step late in training keeps recovered signs from drifting.
    p.lr = lr0 + (lr_end - lr0) * double(step) / double(steps);
    p.seed = std::uint32_t(step) * 2654435761u + 1u;
    const UpdateReport r = update_from_io(ExecSpace{}, state, x_d, go_d, p);
    ASSERT_EQ(r.skipped_rows, 0);
  }
  const auto [loss, signs] = report();
  std::printf("[ held-out loss %.6g -> %.6g, teacher signs recovered %.4f ]\n", loss0, loss, signs);
  RecordProperty("held_out_loss_start", std::to_string(loss0));
  RecordProperty("held_out_loss_end", std::to_string(loss));
  RecordProperty("signs_recovered", std::to_string(signs));
  EXPECT_EQ(signs0, 0.0);
  EXPECT_GE(signs, 0.90);
  EXPECT_LE(loss * 10, loss0);
}

}  // namespace
}  // namespace TernaryCounter::Test
