// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Getting started: a 64 -> 128 -> 10 MLP of TernaryLinear layers on a synthetic task, trained
// with the library's ReLU, softmax cross-entropy and cosine schedule, saved to a checkpoint
// halfway and resumed in fresh layers. It runs on Kokkos::Serial and on the default execution
// space and prints the loss bits of both: they are equal. Returns 1 if they differ or the loss
// did not fall.
#include <TernaryCounter.hpp>

#include <Kokkos_Core.hpp>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

using namespace TernaryCounter;

constexpr std::int64_t n_in = 64, n_hidden = 128, n_classes = 10, batch = 32, steps = 400;

// Step s's batch, made on the host: x uniform in [-1, 1), label = argmax_c sum_i x_i * P[c][i]
// with fixed random signs P (a linear teacher the MLP has to discover).
void make_batch(std::int64_t s, std::vector<float>& x, std::vector<std::int32_t>& labels) {
  for (std::int64_t m = 0; m < batch; ++m) {
    for (std::int64_t i = 0; i < n_in; ++i) {
      const std::uint32_t h = hash_u32(std::uint32_t((s * batch + m) * n_in + i) ^ 0xDA7Au);
      x[m * n_in + i] = float(h & 0xFFFF) / 32768.0f - 1.0f;
    }
    float best = -1e30f;
    for (std::int64_t c = 0; c < n_classes; ++c) {
      float sum = 0.0f;
      for (std::int64_t i = 0; i < n_in; ++i) {
        const bool plus = hash_u32(std::uint32_t(c * n_in + i)) & 1u;
        sum += plus ? x[m * n_in + i] : -x[m * n_in + i];
      }
      if (sum > best) best = sum, labels[m] = std::int32_t(c);
    }
  }
}

// Trains steps [first, last) of the MLP fc2(relu(fc1(x))); returns each step's mean loss.
template <class ExecSpace>
std::vector<float> train(TernaryLinear<ExecSpace>& fc1, TernaryLinear<ExecSpace>& fc2,
                         std::int64_t first, std::int64_t last) {
  using Mem = typename ExecSpace::memory_space;
  using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, Mem>;  // row-major [samples, features]
  const ExecSpace space = fc1.space();
  Matrix x("x", batch, n_in), pre("pre", batch, n_hidden), act("act", batch, n_hidden);
  Matrix logits("logits", batch, n_classes), grad_logits("grad_logits", batch, n_classes);
  Matrix grad_act("grad_act", batch, n_hidden);
  Kokkos::View<std::int32_t*, Mem> labels("labels", batch), correct("correct", batch);
  Kokkos::View<float*, Mem> losses("losses", batch);
  std::vector<float> x_host(batch * n_in), mean_losses;
  std::vector<std::int32_t> labels_host(batch);
  const double lr = UpdateParams{}.lr;
  for (std::int64_t s = first; s < last; ++s) {
    make_batch(s, x_host, labels_host);
    Kokkos::deep_copy(space, x,
                      Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace>(
                          x_host.data(), batch, n_in));
    Kokkos::deep_copy(
        space, labels,
        Kokkos::View<const std::int32_t*, Kokkos::HostSpace>(labels_host.data(), batch));
    fc1.set_lr(lr * cosine_factor(s, steps));
    fc2.set_lr(lr * cosine_factor(s, steps));
    // Forward, loss, then backward_input before the updates change the weights.
    fc1.forward(x, pre);
    relu(space, pre, act);
    fc2.forward(act, logits);
    softmax_cross_entropy(space, logits, labels, losses, correct, 0, grad_logits,
                          1.0f / float(batch));
    fc2.backward_input(grad_logits, grad_act);
    relu_backward(space, pre, grad_act);
    fc2.update_from_io(act, grad_logits);
    fc1.update_from_io(x, grad_act);
    const auto l = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, losses);
    float sum = 0.0f;
    for (std::int64_t m = 0; m < batch; ++m) sum += l(m);
    mean_losses.push_back(sum / float(batch));
  }
  return mean_losses;
}

// The whole run on `space`: half the steps, a checkpoint, fresh layers loaded from it, the rest.
template <class ExecSpace>
std::vector<float> run(const ExecSpace& space, const std::string& checkpoint) {
  const UpdateParams params;  // the recipe that trains: C 8, lr 0.003, lr_scale 0.02, rms_beta 0.99
  std::vector<float> losses;
  {
    TernaryLinear<ExecSpace> fc1(space, "fc1", n_hidden, n_in, params, 1);  // drawn from seed 1
    TernaryLinear<ExecSpace> fc2(space, "fc2", n_classes, n_hidden, params, 2);
    losses = train(fc1, fc2, 0, steps / 2);
    save_layers(checkpoint, {{"fc1", fc1}, {"fc2", fc2}});  // states, seeds, steps and params
  }
  TernaryLinear<ExecSpace> fc1(space, "fc1", n_hidden, n_in, params, 0);
  TernaryLinear<ExecSpace> fc2(space, "fc2", n_classes, n_hidden, params, 0);
  load_layers(checkpoint, {{"fc1", fc1}, {"fc2", fc2}});
  const std::vector<float> rest = train(fc1, fc2, fc1.step(), steps);
  losses.insert(losses.end(), rest.begin(), rest.end());
  return losses;
}

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  const std::vector<float> serial = run(Kokkos::Serial{}, "getting_started_serial.safetensors");
  const std::vector<float> parallel =
      run(Kokkos::DefaultExecutionSpace{}, "getting_started_default.safetensors");
  bool same = true;
  for (std::int64_t s = 0; s < steps; ++s) {
    same = same &&
           std::bit_cast<std::uint32_t>(serial[s]) == std::bit_cast<std::uint32_t>(parallel[s]);
    if (s % 50 == 0 || s == steps - 1) {
      std::printf("step %3lld  loss: Serial %.6f (0x%08x)  %s %.6f (0x%08x)\n", (long long)s,
                  serial[s], std::bit_cast<std::uint32_t>(serial[s]),
                  Kokkos::DefaultExecutionSpace::name(), parallel[s],
                  std::bit_cast<std::uint32_t>(parallel[s]));
    }
  }
  float early = 0.0f, late = 0.0f;
  for (std::int64_t s = 0; s < 20; ++s) early += serial[s], late += serial[steps - 20 + s];
  const bool learned = late < 0.5f * early;
  std::printf("Serial and %s: %s bits; mean loss of the first 20 steps %.4f, last 20 %.4f (%s)\n",
              Kokkos::DefaultExecutionSpace::name(), same ? "identical" : "DIFFERENT", early / 20,
              late / 20, learned ? "falls" : "DOES NOT FALL");
  return same && learned ? 0 : 1;
}
