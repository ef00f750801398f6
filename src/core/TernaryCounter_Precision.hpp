// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The arithmetic a call runs in (SPEC §3 for fp32, §6 for int8) and the options of the products.
#pragma once

#include <cstdint>

namespace TernaryCounter {

/// fp32: the float contract of SPEC §3 and the products' fixed fma chains (the default).
/// int8: operands quantized to int8 from an absmax, every long sum an exact integer sum, a short
/// fixed float epilogue (SPEC §6): the same bits on every backend in any summation order.
enum class Precision { fp32, int8 };

/// The largest M of an int8 update_from_io: |G| <= 127 * 127 * M must fit in int32 (SPEC §6).
inline constexpr std::int64_t int8_max_samples = 133144;
/// The largest depth of an int8 forward (in) or backward_input (out): 127 * depth in int32.
inline constexpr std::int64_t int8_max_depth = 16909320;

/// Options of forward and backward_input.
struct ProductOptions {
  Precision precision = Precision::fp32;
  /// Seed of backward_input's stochastic rounding of grad_out in int8 (SPEC §6, stream tag_b);
  /// unused by forward and by fp32. A training loop passes the step's update seed.
  std::uint32_t seed = 0;
  /// Index of grad_out's first sample in the whole batch, for backward_input in int8: its
  /// rounding stream is indexed by the global sample, so data-parallel ranks that each hold a
  /// block of the batch reproduce one process's bits (Distributed::TernaryLinear sets it).
  std::int64_t sample_offset = 0;
};

/// "fp32" or "int8".
constexpr const char* precision_name(Precision p) {
  return p == Precision::int8 ? "int8" : "fp32";
}

}  // namespace TernaryCounter
