// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Hyper-parameters of one update step and their validation (SPEC §3).
#pragma once

#include "TernaryCounter_Precision.hpp"

#include <cstdint>

namespace TernaryCounter {

/// Hyper-parameters of one counter update. Defaults are the reference package's.
struct UpdateParams {
  int C = 8;                    ///< counter depth, in [2, 11]; must equal the state's C
  double lr = 0.05;             ///< counter learning rate, finite and >= 0
  double lr_scale = 2e-4;       ///< row-scale learning rate, finite and >= 0
  double rms_beta = 0.9;        ///< RMS moment decay, in [0, 1]
  double rms_eps = 1e-3;        ///< denominator floor, finite and > 0
  double clip = 0.0;            ///< row-norm clip (0 = off), finite and >= 0
  std::uint32_t seed = 0;       ///< rounding seed of this step
  bool lagged = false;          ///< use the previous RMS moment in the denominator
  std::int64_t row_offset = 0;  ///< global index of the state's first row (sharded layers), >= 0;
                                ///< row_offset + the state's rows must fit in int64
  int team_size = 0;            ///< threads per row in the row update, 0 = the backend's choice;
                                ///< a launch setting only: results are the same for every value
  std::int64_t workspace_bytes = 0;       ///< update_from_io's gradient rows at once, when it
                                          ///< allocates them (0 = the backend's default: see
                                          ///< from_io_workspace_rows); results do not depend on it
  Precision precision = Precision::fp32;  ///< update_from_io's weight gradient: fp32 (SPEC §3)
                                          ///< or int8 (SPEC §6); the dense update ignores it

  /// Throws std::invalid_argument naming the first bad field and its allowed range.
  void validate() const;
};

/// What one update call did.
struct UpdateReport {
  std::int64_t skipped_rows = 0;  ///< rows left untouched because their gradient was not finite
};

/// The float32 constants of SPEC §3, computed once on the host in double and rounded once.
struct UpdateConstants {
  float lr, lr_scale, beta, one_minus_beta, eps, clip, in_f, sqrt_in_f, C_f;
  int C;
  bool lagged;
  std::uint32_t seed;
  std::int64_t in;
  std::int64_t row_offset;
};

/// Validated params + the state's shape -> kernel constants. Throws std::invalid_argument, like
/// validate(), also when the state's last global row (row_offset + out - 1) overflows int64.
UpdateConstants make_update_constants(const UpdateParams& params, std::int64_t out,
                                      std::int64_t in);

}  // namespace TernaryCounter
