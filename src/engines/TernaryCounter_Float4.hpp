// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Four floats read or written as one 16-byte access (the kernels check alignment first).
#pragma once

namespace TernaryCounter::Impl {

struct alignas(16) Float4 {
  float v[4];
};

}  // namespace TernaryCounter::Impl
