// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Argument checks shared by the public calls: each throws std::invalid_argument naming both sizes.
#pragma once

#include "TernaryCounter_PackedState.hpp"
#include "TernaryCounter_Params.hpp"
#include "TernaryCounter_Precision.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

namespace TernaryCounter::Impl {

/// Throws std::invalid_argument when `value` exceeds the integer path's bound.
inline void require_int8_bound(const char* call, const char* what, std::int64_t value,
                               std::int64_t bound) {
  if (value <= bound) return;
  std::ostringstream msg;
  msg << "TernaryCounter::" << call << ": " << what << " = " << value << " exceeds " << bound
      << ", the integer path's bound (its int32 sums would overflow; SPEC §6)";
  throw std::invalid_argument(msg.str());
}

inline void require_extent(const char* call, const char* what, std::int64_t actual,
                           const char* expected_what, std::int64_t expected) {
  if (actual == expected) return;
  std::ostringstream msg;
  msg << "TernaryCounter::" << call << ": " << what << " is " << actual << " but " << expected_what
      << " is " << expected;
  throw std::invalid_argument(msg.str());
}

/// The state is well formed and its C matches the params; params are valid.
inline void require_precision(const char* call, Precision precision) {
  if (precision == Precision::fp32 || precision == Precision::int8) return;
  throw std::invalid_argument(std::string("TernaryCounter::") + call +
                              ": precision = " + std::to_string(int(precision)) +
                              " is not Precision::fp32 or Precision::int8");
}

template <class MemorySpace>
void validate_state(const char* call, const PackedState<MemorySpace>& state,
                    const UpdateParams& params) {
  params.validate();
  require_row_range(params, state.out());
  const std::int64_t bytes = state.codes.extent(1);
  if (bytes % bytes_per_group != 0) {
    std::ostringstream msg;
    msg << "TernaryCounter::" << call << ": the state's codes have " << bytes
        << " bytes per row, not a multiple of 3, so in = 4*bytes/3 is not a multiple of 4";
    throw std::invalid_argument(msg.str());
  }
  require_extent(call, "state.scale.extent(0)", state.scale.extent(0), "the state's out",
                 state.out());
  require_extent(call, "state.v.extent(0)", state.v.extent(0), "the state's out", state.out());
  require_extent(call, "params.C", params.C, "state.C", state.C);
}

/// An output View of the asynchronous calls was allocated.
template <class View>
void require_allocated(const char* call, const char* what, const View& view) {
  if (view.data() != nullptr) return;
  throw std::invalid_argument(std::string("TernaryCounter::") + call + ": " + what +
                              " is not allocated");
}

/// What a blocking call returns: waits for `space` and reads the count back.
template <class ExecSpace>
UpdateReport wait_for_report(
    const ExecSpace& space,
    const Kokkos::View<std::int64_t, typename ExecSpace::memory_space>& skipped_rows) {
  UpdateReport report;
  Kokkos::View<std::int64_t, Kokkos::HostSpace> host(&report.skipped_rows);
  Kokkos::deep_copy(space, host, skipped_rows);
  space.fence("TernaryCounter: the blocking call's result");
  return report;
}

}  // namespace TernaryCounter::Impl
