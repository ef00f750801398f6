// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A cosine learning-rate schedule: factor(step) = 0.5 (1 + cos(pi step / total)), 1 at the first
// step and 0 after the last; computed from the step alone, so a resumed run continues the same
// curve. Typical use, before each step: layer.set_lr(base_lr * cosine_factor(layer.step(), T)).
#pragma once

#include <cmath>
#include <cstdint>

namespace TernaryCounter {

/// The schedule's factor at `step` of `total_steps` (1 when total_steps <= 0; for step beyond
/// total_steps the cosine rises again: stop at total_steps).
inline double cosine_factor(std::int64_t step, std::int64_t total_steps) {
  if (total_steps <= 0) return 1.0;
  const double pi = 3.14159265358979323846;
  return 0.5 * (1.0 + std::cos(pi * double(step) / double(total_steps)));
}

}  // namespace TernaryCounter
