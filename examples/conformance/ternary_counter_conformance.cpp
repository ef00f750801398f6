// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ternary-counter-conformance [--exec default|serial] [--team-size N] [--rows-per-call R]
//                             CASE_DIR OUT_DIR
// Applies one update of a SPEC §5 case on the chosen execution space and writes the results (for
// an int8 case, SPEC §6, also forward and backward_input of its input state).
#include "ConformanceCase.hpp"

#include <CommandLine.hpp>
#include <TernaryCounter.hpp>
#include <ThreadLimit.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

namespace {

using namespace TernaryCounter;

struct Options {
  std::string exec = "default";
  int team_size = 0;
  std::int64_t rows_per_call = 0;  // 0 = all rows in one call
  std::string case_dir, out_dir;
};

const char* usage =
    "usage: ternary-counter-conformance [--exec default|serial] [--team-size N] "
    "[--rows-per-call R] CASE_DIR OUT_DIR";

std::int64_t positive(const std::string& flag, const std::string& text, std::int64_t hi) {
  return CommandLine::parse_integer(flag, text, 1, hi);
}

Options parse(int argc, char** argv) {
  Options o;
  std::vector<std::string> positional;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    const auto value = [&]() -> std::string {
      if (a + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++a];
    };
    if (arg == "--exec") {
      o.exec = value();
      if (o.exec != "default" && o.exec != "serial") {
        throw std::invalid_argument("--exec must be default or serial, got '" + o.exec + "'");
      }
    } else if (arg == "--team-size") {
      o.team_size = int(positive(arg, value(), INT32_MAX));
    } else if (arg == "--rows-per-call") {
      o.rows_per_call = positive(arg, value(), INT64_MAX);
    } else if (arg == "-h" || arg == "--help") {
      std::cout << usage << "\n";
      std::exit(0);
    } else if (!arg.empty() && arg[0] == '-') {
      throw std::invalid_argument("unknown option '" + arg + "'");
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 2) throw std::invalid_argument("expected CASE_DIR and OUT_DIR");
  o.case_dir = positional[0];
  o.out_dir = positional[1];
  // The results' names are a case's reference files: OUT_DIR must not be a case folder.
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(o.out_dir) / "case.txt", ec) ||
      std::filesystem::equivalent(o.case_dir, o.out_dir, ec)) {
    throw std::invalid_argument("OUT_DIR " + o.out_dir +
                                " is a case folder: its reference files would be overwritten");
  }
  return o;
}

/// Rows [first, last) of a case applied in one call on `space`; returns skipped rows.
template <class ExecSpace>
std::int64_t apply_rows(const ExecSpace& space,
                        const PackedState<typename ExecSpace::memory_space>& state,
                        const Conformance::Case& c, std::int64_t first, std::int64_t last,
                        UpdateParams params) {
  using Mem = typename ExecSpace::memory_space;
  const PackedState<Mem> part = state.row_range(first, last);
  params.row_offset = first;
  const std::int64_t n = last - first;
  if (c.kind == "dense") {
    Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> g("grad_w", n, c.in);
    std::copy(c.grad_w.begin() + first * c.in, c.grad_w.begin() + last * c.in, g.data());
    const auto grad = Kokkos::create_mirror_view_and_copy(Mem{}, g);
    return update(space, part, grad, params).skipped_rows;
  }
  Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> gx("x", c.M, c.in);
  Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> go("grad_out", c.M, n);
  std::copy(c.x.begin(), c.x.end(), gx.data());
  for (std::int64_t m = 0; m < c.M; ++m) {
    for (std::int64_t o = 0; o < n; ++o) go(m, o) = c.grad_out[m * c.out + first + o];
  }
  const auto x = Kokkos::create_mirror_view_and_copy(Mem{}, gx);
  const auto grad_out = Kokkos::create_mirror_view_and_copy(Mem{}, go);
  return update_from_io(space, part, x, grad_out, params, c.precision).skipped_rows;
}

template <class ExecSpace>
Conformance::Result run_case(const ExecSpace& space, const Conformance::Case& c, const Options& o) {
  UpdateParams params = c.params;
  params.team_size = o.team_size;
  const auto state = create_mirror_and_copy(space, c.state());
  const std::int64_t step =
      o.rows_per_call > 0 ? o.rows_per_call : std::max<std::int64_t>(1, c.out);
  std::int64_t skipped = 0;
  for (std::int64_t first = 0; first < c.out; first += step) {
    skipped += apply_rows(space, state, c, first, std::min(c.out, first + step), params);
  }
  space.fence();
  Conformance::Result result = Conformance::result_of(
      create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, state), skipped);
  if (c.precision == Precision::int8) {
    // The products of the input state on the integer path (SPEC §6).
    using Mem = typename ExecSpace::memory_space;
    using HostMatrix = Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace>;
    const auto input = create_mirror_and_copy(space, c.state());
    const auto x = Kokkos::create_mirror_view_and_copy(Mem{}, HostMatrix(c.x.data(), c.M, c.in));
    const auto grad_out =
        Kokkos::create_mirror_view_and_copy(Mem{}, HostMatrix(c.grad_out.data(), c.M, c.out));
    Kokkos::View<float**, Kokkos::LayoutRight, Mem> y("y", c.M, c.out), grad_x("grad_x", c.M, c.in);
    forward(space, input, x, y, {Precision::int8});
    backward_input(space, input, grad_out, grad_x, {Precision::int8, c.product_seed});
    const auto yh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, y);
    const auto gh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, grad_x);
    result.y.assign(yh.data(), yh.data() + yh.size());
    result.grad_x.assign(gh.data(), gh.data() + gh.size());
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    options = parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "ternary-counter-conformance: " << e.what() << "\n" << usage << "\n";
    return 2;
  }
  // Errors must be the only line on stderr: without a binding policy, Kokkos' OpenMP backend
  // prints a multi-line advice at start.
  setenv("OMP_PROC_BIND", "false", /*overwrite=*/0);
  std::optional<Examples::KokkosArguments> kokkos_args;
  try {
    kokkos_args.emplace(argc, argv, "ternary-counter-conformance");
  } catch (const std::exception& e) {
    std::cerr << "ternary-counter-conformance: " << e.what() << "\n";
    return 2;
  }
  Kokkos::ScopeGuard kokkos(kokkos_args->argc(), kokkos_args->argv());
  try {
    const auto c = Conformance::read_case(options.case_dir);
    const auto result = options.exec == "serial"
#ifdef KOKKOS_ENABLE_SERIAL
                            ? run_case(Kokkos::Serial{}, c, options)
#else
                            ? throw std::invalid_argument("this build has no Kokkos::Serial")
#endif
                            : run_case(Kokkos::DefaultExecutionSpace{}, c, options);
    Conformance::write_result(options.out_dir, result);
  } catch (const std::exception& e) {
    std::cerr << "ternary-counter-conformance: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
