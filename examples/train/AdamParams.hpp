// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The FP32 baseline's optimizer settings (Adam, Kingma & Ba 2015; the usual defaults).
#pragma once

namespace TernaryCounter::Train {

struct AdamParams {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

}  // namespace TernaryCounter::Train
