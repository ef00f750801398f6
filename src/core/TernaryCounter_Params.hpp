// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Hyper-parameters of one update step and their validation (SPEC §3).
#pragma once

#include <cstdint>

namespace TernaryCounter {

/// Hyper-parameters of one counter update (SPEC §3). The defaults are the recipe that trains the
/// examples' MLPs (C 8, lr 0.003, lr_scale 0.02, rms_beta 0.99), to be tuned per task.
///
/// Each weight is W = scale[row] * t with t in {-1, 0, +1} and a hidden counter c in
/// [-(C-1), C-1]: together they hold a latent real weight, of which C counter ticks make one
/// step of t (a change of `scale` in W). A step divides each row's gradient g by its RMS
/// (sqrt of the moment v, so the step does not depend on the gradient's magnitude) and moves
/// every counter by lr * (g / rms) * C / scale ticks, stochastically rounded: lr is the step of
/// the latent weight in W's units for a unit-RMS gradient, as in RMSprop. lr_scale is plain SGD
/// on the row scale, which the counters then follow (scale is kept in [1e-5, 10]).
struct UpdateParams {
  int C = 8;                    ///< counter depth, in [2, 11]; must equal the state's C: a larger
                                ///< C needs more consistent gradient before t flips
  double lr = 0.003;            ///< counter learning rate (see above), finite and >= 0
  double lr_scale = 0.02;       ///< row-scale learning rate (SGD on scale), finite and >= 0
  double rms_beta = 0.99;       ///< decay of the row's RMS moment v (the gradient normalizer),
                                ///< in [0, 1]; 0 = each step's own RMS
  double rms_eps = 1e-3;        ///< floor of the RMS denominator, finite and > 0
  double clip = 0.0;            ///< row-norm clip of the normalized step (0 = off), finite, >= 0
  std::uint32_t seed = 0;       ///< rounding seed of this step (TernaryLinear derives it per step)
  bool lagged = false;          ///< use the previous RMS moment in the denominator
  std::int64_t row_offset = 0;  ///< global index of the state's first row (sharded layers), >= 0;
                                ///< row_offset + the state's rows must fit in int64
  int team_size = 0;            ///< threads per row in the row update, 0 = the backend's choice;
                                ///< a launch setting only: results are the same for every value
  std::int64_t workspace_bytes = 0;  ///< update_from_io's gradient rows at once, when it
                                     ///< allocates them (0 = the default: at most the larger of
                                     ///< 4 MiB and 1/8 of the layer's float32 gradient, within
                                     ///< the backend's budget; see from_io_workspace_rows);
                                     ///< results do not depend on it

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

namespace Impl {
/// make_update_constants' parts: the check of row_offset + out, and the constants of params
/// the call has checked (the dispatchers: the public calls validate once).
void require_row_range(const UpdateParams& params, std::int64_t out);
UpdateConstants update_constants(const UpdateParams& params, std::int64_t out, std::int64_t in);
}  // namespace Impl

}  // namespace TernaryCounter
