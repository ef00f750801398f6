// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Reading and writing the conformance case format of SPEC §5 (host only).
#pragma once

#include <TernaryCounter_PackedState.hpp>
#include <TernaryCounter_Params.hpp>
#include <TernaryCounter_Precision.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace TernaryCounter::Conformance {

/// One case folder: its parameters, inputs and (where present) expected results.
struct Case {
  std::string kind;  ///< "dense" or "from_io"
  std::int64_t out = 0, in = 0, M = 0;
  UpdateParams params;
  Precision precision = Precision::fp32;  ///< key `precision`: the update's arithmetic
  std::vector<std::uint8_t> codes_in;     ///< unpacked [out * in]
  std::vector<float> scale_in, v_in;
  std::vector<float> grad_w;       ///< dense: [out * in]
  std::vector<float> x, grad_out;  ///< from_io: [M * in], [M * out]
  /// int8 cases (SPEC §6; key `precision int8`): the update runs on the integer path, and the
  /// case also checks forward(x) and backward_input(grad_out) with seed `product_seed`.
  std::uint32_t product_seed = 0;

  /// The input state, packed, on the host.
  PackedState<Kokkos::HostSpace> state() const;
};

/// Expected or produced results of one update.
struct Result {
  std::vector<std::uint8_t> codes;  ///< unpacked [out * in]
  std::vector<float> scale, v;
  std::int64_t skipped = 0;
  std::vector<float> y, grad_x;  ///< int8 cases: forward(x) [M * out], backward_input [M * in]
};

/// Reads case.txt and the input files; throws std::runtime_error naming the file on any problem
/// (missing file, wrong size, bad key or value).
Case read_case(const std::filesystem::path& dir);

/// Reads the results with file-name prefix `prefix` ("spec_" or ""); throws if absent or bad.
Result read_result(const std::filesystem::path& dir, const Case& c, const std::string& prefix);

/// Whether the reference package's result files (no prefix) are present.
bool has_reference_result(const std::filesystem::path& dir);

/// The result held by a host state after an update.
Result result_of(const PackedState<Kokkos::HostSpace>& state, std::int64_t skipped);

/// Writes codes_out.u8, scale_out.f32, v_out.f32 and skipped.txt into dir (created if needed),
/// and y_out.f32, grad_x_out.f32 when the result has them.
void write_result(const std::filesystem::path& dir, const Result& result);

}  // namespace TernaryCounter::Conformance
