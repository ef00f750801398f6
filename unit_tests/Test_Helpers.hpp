// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Shared test helpers: moving states and matrices between host and MemSpace, running a
// conformance case on ExecSpace (whole or in row splits), and comparing results.
#pragma once

#include "Test_Common.hpp"

#include <ConformanceCase.hpp>
#include "IntegerReference.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace TernaryCounter::Test {

namespace fs = std::filesystem;
using HostState = PackedState<Kokkos::HostSpace>;
using DeviceState = PackedState<MemSpace>;
using DeviceMatrix = Kokkos::View<float**, Kokkos::LayoutRight, MemSpace>;
using Conformance::Case;
using Conformance::Result;

// ---------------------------------------------------------------------------------------------
// Case folders

/// Cases copied into unit_tests/data/conformance (small enough to live in the repository).
inline const std::vector<std::string>& small_case_names() {
  static const std::vector<std::string> names = {"dense_basic_c11",
                                                 "dense_c2",
                                                 "dense_c5_in100",
                                                 "dense_clip1_hot_c8",
                                                 "dense_lagged_c8",
                                                 "dense_lagged_v0_c8",
                                                 "dense_saturation_edges_c8",
                                                 "dense_scale_clamp_hi",
                                                 "dense_scale_clamps",
                                                 "dense_seed0_in4",
                                                 "dense_seedmax_zero_rows",
                                                 "io_64x256_c11",
                                                 "io_basic_c11",
                                                 "spec_nonfinite_dense",
                                                 "spec_nonfinite_io",
                                                 "int_basic_c8",
                                                 "int_lagged_clip_c11",
                                                 "int_recipe_c8",
                                                 "int_special_values_c8"};
  return names;
}

/// Cases read from TERNARYCOUNTER_SHARED_CONFORMANCE_DIR when that folder exists.
/// spec_io_2048x1280_m96_c8 is the one that fills a GPU with full-size gradient tiles (>= 132
/// of them) and spans many host tile rows, bit-exactly.
inline const std::vector<std::string>& large_case_names() {
  static const std::vector<std::string> names = {"dense_256x4096_c8", "dense_512x2048_c11",
                                                 "io_fresh_init_c8", "io_lagged_c8",
                                                 "spec_io_2048x1280_m96_c8"};
  return names;
}

inline fs::path test_data_dir() {
  return fs::path(TERNARYCOUNTER_TEST_DATA_DIR);
}
inline fs::path shared_conformance_dir() {
  return fs::path(TERNARYCOUNTER_SHARED_CONFORMANCE_DIR);
}

inline bool is_small_case(const std::string& name) {
  const auto& s = small_case_names();
  return std::find(s.begin(), s.end(), name) != s.end();
}

/// The folder of a case: in the repository for small cases, in ../shared for large ones.
inline fs::path case_dir(const std::string& name) {
  return (is_small_case(name) ? test_data_dir() : shared_conformance_dir()) / name;
}

/// GoogleTest parameter name of a case (case names are already valid identifiers).
struct CaseName {
  std::string operator()(const ::testing::TestParamInfo<std::string>& info) const {
    return info.param;
  }
};

// Skips the current test (from a TEST body or SetUp) when a large case's folder is absent.
#define TERNARYCOUNTER_SKIP_IF_CASE_ABSENT(name)                                             \
  do {                                                                                       \
    if (!::TernaryCounter::Test::is_small_case(name) &&                                      \
        !std::filesystem::exists(::TernaryCounter::Test::case_dir(name) / "case.txt")) {     \
      GTEST_SKIP() << "large case " << (name) << " not run: ../shared is absent (looked in " \
                   << ::TernaryCounter::Test::case_dir(name).string() << ")";                \
    }                                                                                        \
  } while (false)

// ---------------------------------------------------------------------------------------------
// Host <-> MemSpace

inline DeviceState to_device(const HostState& s) {
  return create_mirror_and_copy(ExecSpace{}, s);
}

inline HostState to_host(const DeviceState& s) {
  return create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, s);
}

/// A [rows, cols] MemSpace matrix holding the row-major host data.
inline DeviceMatrix to_device(const std::vector<float>& data, std::int64_t rows, std::int64_t cols,
                              const std::string& label = "TernaryCounter::test::matrix") {
  if (std::int64_t(data.size()) != rows * cols) throw std::logic_error("to_device: bad size");
  DeviceMatrix d(Kokkos::view_alloc(label, Kokkos::WithoutInitializing), rows, cols);
  Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace,
               Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      h(data.data(), rows, cols);
  Kokkos::deep_copy(d, h);
  return d;
}

// ---------------------------------------------------------------------------------------------
// Running a case

struct RunOptions {
  int team_size = 0;                ///< UpdateParams::team_size
  std::int64_t rows_per_call = 0;   ///< rows per update call (0 = all rows in one call)
  std::int64_t workspace_rows = 0;  ///< from_io: caller workspace rows (0 = library's choice)
  bool asynchronous = false;  ///< the overloads that only enqueue: no fence until all calls ran
};

inline std::string describe(const RunOptions& o) {
  std::ostringstream s;
  s << "team_size=" << o.team_size << " rows_per_call=" << o.rows_per_call
    << " workspace_rows=" << o.workspace_rows << (o.asynchronous ? " asynchronous" : "");
  return s.str();
}

/// Runs a case on ExecSpace with its state and inputs in MemSpace; row splits are separate calls
/// on subviews of the state rows with params.row_offset = the split's first row.
inline Result run_case(const Case& c, const RunOptions& opt = {}) {
  const DeviceState state = to_device(c.state());
  const std::int64_t out = c.out, in = c.in, M = c.M;
  const std::int64_t step =
      opt.rows_per_call > 0 ? opt.rows_per_call : std::max<std::int64_t>(1, out);
  const bool dense = c.kind == "dense";
  DeviceMatrix grad_w, x;
  if (dense) {
    grad_w = to_device(c.grad_w, out, in, "TernaryCounter::test::grad_w");
  } else {
    x = to_device(c.x, M, in, "TernaryCounter::test::x");
  }
  const ExecSpace space;
  const std::int64_t calls = (std::max<std::int64_t>(out, 1) + step - 1) / step;
  // The asynchronous calls write each count to their own element; one fence at the end. What
  // they read (gradients, workspaces) is kept alive until then.
  const Kokkos::View<std::int64_t*, MemSpace> counts("TernaryCounter::test::skipped_rows", calls);
  std::vector<DeviceMatrix> keep;
  std::int64_t skipped = 0;
  for (std::int64_t first = 0, call = 0; first < std::max<std::int64_t>(out, 1);
       first += step, ++call) {
    const std::int64_t last = std::min(out, first + step);
    UpdateParams p = c.params;
    p.team_size = opt.team_size;
    p.row_offset = first;
    const DeviceState part = state.row_range(first, last);
    const SkippedRowsView<MemSpace> count = Kokkos::subview(counts, call);
    if (dense) {
      const auto g =
          Kokkos::subview(grad_w, std::pair<std::int64_t, std::int64_t>(first, last), Kokkos::ALL);
      if (opt.asynchronous) {
        update(space, part, g, p, count);
      } else {
        skipped += update(space, part, g, p).skipped_rows;
      }
      continue;
    }
    // The split's grad_out columns as a contiguous [M, rows] matrix.
    std::vector<float> g(M * (last - first));
    for (std::int64_t m = 0; m < M; ++m) {
      for (std::int64_t o = first; o < last; ++o)
        g[m * (last - first) + (o - first)] = c.grad_out[m * out + o];
    }
    const DeviceMatrix grad_out = to_device(g, M, last - first, "TernaryCounter::test::grad_out");
    const std::int64_t ws_rows = opt.workspace_rows > 0
                                     ? opt.workspace_rows
                                     : from_io_workspace_rows<ExecSpace>(last - first, in);
    const DeviceMatrix workspace("TernaryCounter::test::workspace", ws_rows, in);
    if (opt.asynchronous) {
      update_from_io(space, part, x, grad_out, p, workspace, count, c.precision);
      keep.insert(keep.end(), {grad_out, workspace});
    } else if (opt.workspace_rows > 0) {
      skipped += update_from_io(space, part, x, grad_out, p, workspace, c.precision).skipped_rows;
    } else {
      skipped += update_from_io(space, part, x, grad_out, p, c.precision).skipped_rows;
    }
  }
  if (opt.asynchronous) {
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, counts);
    for (std::int64_t k = 0; k < calls; ++k) skipped += host(k);
  }
  return Conformance::result_of(to_host(state), skipped);
}

/// The same case run by the host reference (TernaryCounter::Reference).
inline Result run_reference(const Case& c) {
  const HostState state = c.state();
  const UpdateReport r =
      c.kind == "dense" ? Reference::update(state, c.grad_w.data(), c.params)
      : c.precision == Precision::int8
          ? Reference::Int8::update_from_io(state, c.x.data(), c.grad_out.data(), c.M, c.params)
          : Reference::update_from_io(state, c.x.data(), c.grad_out.data(), c.M, c.params);
  return Conformance::result_of(state, r.skipped_rows);
}

// ---------------------------------------------------------------------------------------------
// Team sizes

/// Candidate team sizes: small ones for host backends, warp multiples for GPUs.
inline const std::vector<int>& team_size_candidates() {
  static const std::vector<int> c = {1, 2, 3, 4, 32, 64, 96, 128, 256, 512, 1024};
  return c;
}

/// 0 (the backend's choice) and the candidates this backend accepts for a layer `in` wide, asked
/// of the library itself through the public API (its launch check knows the kernel's real limits):
/// an update of a one-row state with that team size either runs or throws naming team_size.
inline std::vector<int> valid_team_sizes(std::int64_t in) {
  const std::int64_t width = std::max<std::int64_t>(4, in / 4 * 4);
  const DeviceState probe("TernaryCounter::test::team_probe", 1, width, 8);
  const DeviceMatrix grad("TernaryCounter::test::team_probe_grad", 1, width);
  std::vector<int> sizes = {0};
  for (int t : team_size_candidates()) {
    UpdateParams p;
    p.team_size = t;
    try {
      update(ExecSpace{}, probe, grad, p);
      sizes.push_back(t);
    } catch (const std::invalid_argument& e) {
      if (std::string(e.what()).find("team_size") == std::string::npos) throw;
    }
  }
  return sizes;
}

/// A step whose counters move within one call (C 8, lr 0.05, lr_scale 2e-4, rms_beta 0.9), for
/// tests that compare updates bit for bit.
inline UpdateParams counter_moving_params(std::uint32_t seed) {
  UpdateParams p;
  p.C = 8;
  p.lr = 0.05;
  p.lr_scale = 2e-4;
  p.rms_beta = 0.9;
  p.seed = seed;
  return p;
}

// ---------------------------------------------------------------------------------------------
// Comparisons

inline std::uint32_t bits(float f) {
  return std::bit_cast<std::uint32_t>(f);
}

/// Whether two float matrices hold the same bits, element by element.
inline ::testing::AssertionResult same_bits(const DeviceMatrix& a, const DeviceMatrix& b) {
  const auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a);
  const auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b);
  for (std::size_t k = 0; k < ha.size(); ++k) {
    if (std::bit_cast<std::uint32_t>(ha.data()[k]) != std::bit_cast<std::uint32_t>(hb.data()[k])) {
      return ::testing::AssertionFailure()
             << "element " << k << ": " << ha.data()[k] << " but " << hb.data()[k];
    }
  }
  return ::testing::AssertionSuccess();
}

/// Bit-for-bit equality of codes, scale, v and the skipped count; names the first differences.
inline ::testing::AssertionResult bit_exact(const Result& got, const Result& want) {
  std::ostringstream err;
  int shown = 0;
  std::int64_t bad_codes = 0, bad_rows = 0;
  if (got.codes.size() != want.codes.size() || got.scale.size() != want.scale.size() ||
      got.v.size() != want.v.size()) {
    return ::testing::AssertionFailure() << "result sizes differ";
  }
  const std::int64_t out = std::int64_t(want.scale.size());
  const std::int64_t in = out > 0 ? std::int64_t(want.codes.size()) / out : 0;
  for (std::size_t e = 0; e < want.codes.size(); ++e) {
    if (got.codes[e] == want.codes[e]) continue;
    ++bad_codes;
    if (shown++ < 5) {
      err << "\n  code (" << std::int64_t(e) / in << ", " << std::int64_t(e) % in << "): got "
          << int(got.codes[e]) << ", want " << int(want.codes[e]);
    }
  }
  for (std::int64_t o = 0; o < out; ++o) {
    if (bits(got.scale[o]) == bits(want.scale[o]) && bits(got.v[o]) == bits(want.v[o])) continue;
    ++bad_rows;
    if (shown++ < 10) {
      err << "\n  row " << o << ": scale got " << got.scale[o] << " want " << want.scale[o]
          << ", v got " << got.v[o] << " want " << want.v[o];
    }
  }
  if (bad_codes == 0 && bad_rows == 0 && got.skipped == want.skipped) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << bad_codes << " codes and " << bad_rows << " rows' scale/v differ; skipped got "
         << got.skipped << ", want " << want.skipped << err.str();
}

/// The code SPEC §3 step 10 gives for old ternary t and rounded counter cc (written out again
/// here, independently of RowMath).
inline int code_after_carry(int t, int cc, int C) {
  const int carry = cc / C;  // C++ integer division truncates toward zero, as the SPEC says
  int rem = cc - carry * C;
  const int nt = t + carry;
  const int t_new = std::clamp(nt, -1, 1);
  if (t_new != nt) rem = (cc > 0 ? 1 : (cc < 0 ? -1 : 0)) * (C - 1);  // blocked flip
  rem = std::clamp(rem, -(C - 1), C - 1);
  return encode(t_new, rem, C);
}

/// "One counter step" (SPEC §4): the two new codes are what step 10 gives for two rounded
/// counters cc and cc+1 from the same old code, i.e. one rounding came out on the other side.
/// That is |Δc| = 1 with the same ternary, or a carry boundary such as (t, C-1) vs (t+1, 0).
inline bool one_counter_step_apart(int old_code, int a, int b, int C) {
  const int t = decode_ternary(old_code, C);
  for (int cc = -3 * C - 1; cc <= 3 * C; ++cc) {
    const int lo = code_after_carry(t, cc, C), hi = code_after_carry(t, cc + 1, C);
    if ((lo == a && hi == b) || (lo == b && hi == a)) return true;
  }
  return false;
}

inline bool within_relative(float a, float b, double tol) {
  if (bits(a) == bits(b)) return true;
  const double da = a, db = b;
  return std::abs(da - db) <= tol * std::max(std::abs(da), std::abs(db));
}

/// SPEC §4 against the reference package's files: at most 1 code in 1000 different, each by one
/// counter step, and scale and v within 1e-6 relative.
inline ::testing::AssertionResult within_reference_tolerance(const Result& got, const Result& ref,
                                                             const Case& c) {
  std::ostringstream err;
  std::int64_t differ = 0, far = 0, bad_rows = 0;
  for (std::size_t e = 0; e < ref.codes.size(); ++e) {
    if (got.codes[e] == ref.codes[e]) continue;
    ++differ;
    if (!one_counter_step_apart(c.codes_in[e], got.codes[e], ref.codes[e], c.params.C)) {
      if (far++ < 5) {
        err << "\n  code (" << std::int64_t(e) / c.in << ", " << std::int64_t(e) % c.in << "): got "
            << int(got.codes[e]) << ", reference " << int(ref.codes[e]) << " (old code "
            << int(c.codes_in[e]) << ") is more than one counter step";
      }
    }
  }
  for (std::size_t o = 0; o < ref.scale.size(); ++o) {
    if (within_relative(got.scale[o], ref.scale[o], 1e-6) &&
        within_relative(got.v[o], ref.v[o], 1e-6)) {
      continue;
    }
    if (bad_rows++ < 5) {
      err << "\n  row " << o << ": scale " << got.scale[o] << " vs " << ref.scale[o] << ", v "
          << got.v[o] << " vs " << ref.v[o];
    }
  }
  const std::int64_t total = std::int64_t(ref.codes.size());
  if (differ * 1000 <= total && far == 0 && bad_rows == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << differ << " of " << total << " codes differ (at most " << total / 1000 << " allowed), "
         << far << " by more than one counter step; " << bad_rows
         << " rows' scale/v off by more than 1e-6 relative" << err.str();
}

/// Whether the message contains n as a whole number (not as part of a longer one).
inline bool mentions_number(const std::string& message, std::int64_t n) {
  const std::string s = std::to_string(n);
  for (std::size_t p = message.find(s); p != std::string::npos; p = message.find(s, p + 1)) {
    const bool left = p == 0 || !std::isdigit(static_cast<unsigned char>(message[p - 1]));
    const bool right = p + s.size() == message.size() ||
                       !std::isdigit(static_cast<unsigned char>(message[p + s.size()]));
    if (left && right) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Deterministic random numbers (same on every platform, unlike std:: distributions)

struct SplitMix64 {
  std::uint64_t s;
  explicit SplitMix64(std::uint64_t seed) : s(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) with 24 bits (exact in float).
  float uniform() { return float(next() >> 40) * 0x1p-24f; }
  /// Uniform in [lo, hi).
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
  /// Integer in [0, n).
  int below(int n) { return int(next() % std::uint64_t(n)); }
};

/// A host state with random valid codes, scale in [0.05, 2) and v in [0, 0.05).
inline HostState random_state(std::int64_t out, std::int64_t in, int C, SplitMix64& rng) {
  Kokkos::View<std::uint8_t**, Kokkos::HostSpace> codes("codes", out, in);
  Kokkos::View<float*, Kokkos::HostSpace> scale("scale", out), v("v", out);
  for (std::int64_t o = 0; o < out; ++o) {
    for (std::int64_t i = 0; i < in; ++i) codes(o, i) = std::uint8_t(rng.below(code_count(C)));
    scale(o) = rng.uniform(0.05f, 2.0f);
    v(o) = rng.uniform(0.0f, 0.05f);
  }
  return pack_state("TernaryCounter::test::random_state", codes, scale, v, C);
}

/// Bitwise equality of two host states (codes bytes, scale and v bits).
inline ::testing::AssertionResult same_state(const HostState& a, const HostState& b) {
  if (a.out() != b.out() || a.codes.extent(1) != b.codes.extent(1) || a.C != b.C) {
    return ::testing::AssertionFailure() << "state shapes differ";
  }
  for (std::int64_t o = 0; o < a.out(); ++o) {
    for (std::size_t j = 0; j < a.codes.extent(1); ++j) {
      if (a.codes(o, j) != b.codes(o, j)) {
        return ::testing::AssertionFailure() << "codes byte (" << o << ", " << j << ") differs";
      }
    }
    if (bits(a.scale(o)) != bits(b.scale(o)) || bits(a.v(o)) != bits(b.v(o))) {
      return ::testing::AssertionFailure() << "scale or v of row " << o << " differs";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace TernaryCounter::Test
