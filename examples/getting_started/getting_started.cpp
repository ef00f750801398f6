// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Getting started: a 64 -> 128 -> 10 MLP of TernaryLinear layers learns a synthetic task with the
// library's ReLU, softmax cross-entropy and cosine schedule; halfway it is saved and resumed in
// fresh layers. It runs on Kokkos::Serial and on the default execution space: the loss bits are
// equal. Returns 1 if they differ or the loss did not fall.
#include <TernaryCounter.hpp>

#include <bit>
#include <cstdio>
#include <string>
#include <vector>

using namespace TernaryCounter;
constexpr std::int64_t n_in = 64, n_hidden = 128, n_classes = 10, batch = 32, steps = 400;

// Batch s: x uniform in [-1, 1), label = argmax_c sum_i x_i * P[c][i] with random signs P.
void make_batch(std::int64_t s, float* x, std::int32_t* labels) {
  for (std::int64_t m = 0; m < batch; ++m) {
    float* row = x + m * n_in;
    for (std::int64_t i = 0; i < n_in; ++i)
      row[i] = float(hash_u32(std::uint32_t((s * batch + m) * n_in + i)) & 0xFFFF) / 32768 - 1;
    float best = -1e30f;
    for (std::int32_t c = 0; c < n_classes; ++c) {
      float sum = 0.0f;
      for (std::int64_t i = 0; i < n_in; ++i)
        sum += (hash_u32(std::uint32_t(c * n_in + i)) & 1u) ? row[i] : -row[i];
      if (sum > best) best = sum, labels[m] = c;
    }
  }
}

// Steps [first, last) of fc2(relu(fc1(x))); returns each step's mean loss.
template <class Exec>
std::vector<float> train(TernaryLinear<Exec>& fc1, TernaryLinear<Exec>& fc2, std::int64_t first,
                         std::int64_t last) {
  using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, typename Exec::memory_space>;
  const Exec space = fc1.space();
  Matrix x("x", batch, n_in), pre("pre", batch, n_hidden), act("act", batch, n_hidden);
  Matrix logits("logits", batch, n_classes), grad_logits("grad", batch, n_classes);
  Matrix grad_act("grad_act", batch, n_hidden);
  Kokkos::View<std::int32_t*, typename Exec::memory_space> labels("labels", batch),
      correct("correct", batch);
  Kokkos::View<float*, typename Exec::memory_space> losses("losses", batch);
  auto x_host = Kokkos::create_mirror_view(x);
  auto labels_host = Kokkos::create_mirror_view(labels);
  std::vector<float> mean_losses;
  for (std::int64_t s = first; s < last; ++s) {
    make_batch(s, x_host.data(), labels_host.data());
    Kokkos::deep_copy(space, x, x_host);
    Kokkos::deep_copy(space, labels, labels_host);
    fc1.set_lr(UpdateParams{}.lr * cosine_factor(s, steps));
    fc2.set_lr(UpdateParams{}.lr * cosine_factor(s, steps));
    fc1.forward(x, pre);  // forward, loss, then backward_input before the updates change W
    relu(space, pre, act);
    fc2.forward(act, logits);
    softmax_cross_entropy(space, logits, labels, losses, correct, 0, grad_logits, 1.0f / batch);
    fc2.backward_input(grad_logits, grad_act);
    relu_backward(space, pre, grad_act);
    fc2.update_from_io(act, grad_logits);
    fc1.update_from_io(x, grad_act);
    const auto l = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, losses);
    float sum = 0.0f;
    for (std::int64_t m = 0; m < batch; ++m) sum += l(m);
    mean_losses.push_back(sum / batch);
  }
  return mean_losses;
}

// The run on `space`: half the steps, a checkpoint, fresh layers loaded from it, the rest.
template <class Exec>
std::vector<float> run(const Exec& space, const std::string& checkpoint) {
  const UpdateParams params;  // the recipe that trains: C 8, lr 0.003, lr_scale 0.02, rms_beta 0.99
  std::vector<float> losses;
  {
    TernaryLinear<Exec> fc1(space, "fc1", n_hidden, n_in, params, 1);  // drawn from seed 1
    TernaryLinear<Exec> fc2(space, "fc2", n_classes, n_hidden, params, 2);
    losses = train(fc1, fc2, 0, steps / 2);
    save_layers(checkpoint, {{"fc1", fc1}, {"fc2", fc2}});  // states, seeds, steps and params
  }
  TernaryLinear<Exec> fc1(space, "fc1", n_hidden, n_in, params, 0);
  TernaryLinear<Exec> fc2(space, "fc2", n_classes, n_hidden, params, 0);
  load_layers(checkpoint, {{"fc1", fc1}, {"fc2", fc2}});
  const std::vector<float> rest = train(fc1, fc2, fc1.step(), steps);
  losses.insert(losses.end(), rest.begin(), rest.end());
  return losses;
}

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  const auto serial = run(Kokkos::Serial{}, "getting_started_serial.safetensors");
  const auto parallel = run(Kokkos::DefaultExecutionSpace{}, "getting_started_default.safetensors");
  const char* name = Kokkos::DefaultExecutionSpace::name();
  bool same = true;
  for (std::int64_t s = 0; s < steps; ++s) {
    const auto a = std::bit_cast<std::uint32_t>(serial[s]),
               b = std::bit_cast<std::uint32_t>(parallel[s]);
    same = same && a == b;
    if (s % 50 == 0 || s == steps - 1)
      std::printf("step %3lld  loss: Serial %.6f (0x%08x)  %s %.6f (0x%08x)\n", (long long)s,
                  serial[s], a, name, parallel[s], b);
  }
  float early = 0.0f, late = 0.0f;
  for (std::int64_t s = 0; s < 20; ++s) early += serial[s], late += serial[steps - 20 + s];
  std::printf("Serial and %s: %s bits; mean loss of the first 20 steps %.4f, last 20 %.4f\n", name,
              same ? "identical" : "DIFFERENT", early / 20, late / 20);
  return same && late < 0.5f * early ? 0 : 1;
}
