// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TernaryCounter_Params.hpp"

#include "TernaryCounter_Codes.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

namespace TernaryCounter {

namespace {

[[noreturn]] void reject(const char* field, double value, const char* allowed) {
  std::ostringstream msg;
  msg << "TernaryCounter::UpdateParams: " << field << " = " << value << " is out of range; "
      << field << " must be " << allowed;
  throw std::invalid_argument(msg.str());
}

// The kernels use float32 copies of the real-valued fields (SPEC §3): a double that is valid but
// becomes inf, or a nonzero one that becomes 0, would silently change what the update does.
void require_float32(const char* field, double value) {
  constexpr double max = std::numeric_limits<float>::max();
  if (!(std::abs(value) <= max)) {
    reject(field, value, "representable in float32 (at most 3.40282e+38)");
  }
  if (value != 0 && float(value) == 0.0f) {
    reject(field, value, "0 or large enough not to round to 0 in float32 (at least 1.4e-45)");
  }
}

}  // namespace

void UpdateParams::validate() const {
  if (C < min_counter_depth || C > max_counter_depth) reject("C", C, "an integer in [2, 11]");
  if (!std::isfinite(lr) || lr < 0) reject("lr", lr, "finite and >= 0");
  if (!std::isfinite(lr_scale) || lr_scale < 0) reject("lr_scale", lr_scale, "finite and >= 0");
  if (!(rms_beta >= 0 && rms_beta <= 1)) reject("rms_beta", rms_beta, "in [0, 1]");
  if (!std::isfinite(rms_eps) || !(rms_eps > 0)) reject("rms_eps", rms_eps, "finite and > 0");
  if (!std::isfinite(clip) || clip < 0) reject("clip", clip, "finite and >= 0 (0 disables it)");
  if (row_offset < 0) reject("row_offset", double(row_offset), ">= 0");
  if (team_size < 0) reject("team_size", team_size, ">= 0 (0 lets the backend choose)");
  if (workspace_bytes < 0) {
    reject("workspace_bytes", double(workspace_bytes), ">= 0 (0: the backend's default)");
  }
  require_float32("lr", lr);
  require_float32("lr_scale", lr_scale);
  require_float32("rms_eps", rms_eps);
  require_float32("clip", clip);
}

UpdateConstants make_update_constants(const UpdateParams& params, std::int64_t out,
                                      std::int64_t in) {
  params.validate();
  Impl::require_row_range(params, out);
  return Impl::update_constants(params, out, in);
}

void Impl::require_row_range(const UpdateParams& params, std::int64_t out) {
  // The kernels form the global row row_offset + o in int64 (signed overflow is undefined).
  if (params.row_offset > std::numeric_limits<std::int64_t>::max() - out) {
    std::ostringstream msg;
    msg << "TernaryCounter::UpdateParams: row_offset = " << params.row_offset
        << " is out of range for a state of " << out
        << " rows; row_offset + rows must be at most 2^63 - 1";
    throw std::invalid_argument(msg.str());
  }
}

UpdateConstants Impl::update_constants(const UpdateParams& params, std::int64_t, std::int64_t in) {
  UpdateConstants k{};
  k.lr = float(params.lr);
  k.lr_scale = float(params.lr_scale);
  k.beta = float(params.rms_beta);
  k.one_minus_beta = float(1.0 - params.rms_beta);
  k.eps = float(params.rms_eps);
  k.clip = float(params.clip);
  k.in_f = float(in);
  k.sqrt_in_f = float(std::sqrt(double(in)));
  k.C_f = float(params.C);
  k.C = params.C;
  k.lagged = params.lagged;
  k.seed = params.seed;
  k.in = in;
  k.row_offset = params.row_offset;
  return k;
}

}  // namespace TernaryCounter
