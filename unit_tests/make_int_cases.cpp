// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ternary-counter-make-int-cases OUT_DIR: writes the int_* conformance cases (SPEC §6) into
// OUT_DIR, their expected results computed by the host-loop reference of the integer path
// (IntegerReference.hpp). The committed cases in unit_tests/data/conformance are
// this program's output; a ctest regenerates them and compares every file.
#include "IntegerReference.hpp"

#include <ConformanceCase.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace TernaryCounter;
namespace fs = std::filesystem;

struct CaseSpec {
  const char* name;
  std::int64_t out, in, M;
  int C;
  double lr, lr_scale, rms_beta, rms_eps, clip;
  std::uint32_t seed, product_seed;
  bool lagged;
  bool special_values;  ///< zero and non-finite columns and samples
};

/// Uniform in [lo, hi) from a counter: the cases' inputs.
float value(std::uint32_t stream, std::uint32_t index, float lo, float hi) {
  const std::uint32_t h = hash_u32(stream ^ hash_u32(index));
  return lo + (hi - lo) * (float(h >> 8) * 0x1p-24f);
}

template <class T>
void write(const fs::path& file, const std::vector<T>& data) {
  std::ofstream out(file, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size() * sizeof(T)));
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

void make_case(const fs::path& root, const CaseSpec& s) {
  const fs::path dir = root / s.name;
  fs::create_directories(dir);
  std::vector<std::uint8_t> codes(s.out * s.in);
  std::vector<float> scale(s.out), v(s.out), x(s.M * s.in), grad_out(s.M * s.out);
  for (std::size_t k = 0; k < codes.size(); ++k) {
    codes[k] = std::uint8_t(hash_u32(0xC0DEu ^ hash_u32(std::uint32_t(k))) % code_count(s.C));
  }
  for (std::int64_t o = 0; o < s.out; ++o) {
    scale[o] = value(1, std::uint32_t(o), 0.05f, 2.0f);
    v[o] = value(2, std::uint32_t(o), 0.0f, 0.05f);
  }
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = value(3, std::uint32_t(k), -2.0f, 2.0f);
  for (std::size_t k = 0; k < grad_out.size(); ++k) {
    grad_out[k] = value(4, std::uint32_t(k), -0.5f, 0.5f);
  }
  if (s.special_values) {
    for (std::int64_t m = 0; m < s.M; ++m) {
      x[m * s.in + 1] = 0.0f;          // a zero input column
      grad_out[m * s.out + 2] = 0.0f;  // a zero output column: its gradient row is 0
    }
    for (std::int64_t i = 0; i < s.in; ++i) x[3 * s.in + i] = 0.0f;     // a zero sample
    grad_out[1 * s.out + 5] = std::numeric_limits<float>::infinity();   // row 5 is skipped
    grad_out[4 * s.out + 7] = std::numeric_limits<float>::quiet_NaN();  // row 7 is skipped
  }
  UpdateParams params;
  params.C = s.C;
  params.lr = s.lr;
  params.lr_scale = s.lr_scale;
  params.rms_beta = s.rms_beta;
  params.rms_eps = s.rms_eps;
  params.clip = s.clip;
  params.seed = s.seed;
  params.lagged = s.lagged;

  std::ofstream txt(dir / "case.txt");
  txt << "kind from_io\nprecision int8\nout " << s.out << "\nin " << s.in << "\nM " << s.M << "\nC "
      << s.C << "\nlr " << s.lr << "\nlr_scale " << s.lr_scale << "\nrms_beta " << s.rms_beta
      << "\nrms_eps " << s.rms_eps << "\nseed " << s.seed << "\nlagged " << int(s.lagged)
      << "\nclip " << s.clip << "\nproduct_seed " << s.product_seed << "\n";
  write(dir / "codes_in.u8", codes);
  write(dir / "scale_in.f32", scale);
  write(dir / "v_in.f32", v);
  write(dir / "x.f32", x);
  write(dir / "grad_out.f32", grad_out);

  Conformance::Case c;
  c.kind = "from_io";
  c.out = s.out;
  c.in = s.in;
  c.M = s.M;
  c.params = params;
  c.precision = Precision::int8;
  c.codes_in = codes;
  c.scale_in = scale;
  c.v_in = v;
  const PackedState<Kokkos::HostSpace> state = c.state();
  const auto packed = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, state.codes);
  write(dir / "state_in.u8",
        std::vector<std::uint8_t>(packed.data(), packed.data() + packed.size()));
  Conformance::Result result;
  result.y = Reference::Int8::forward(state, x.data(), s.M);
  result.grad_x = Reference::Int8::backward_input(state, grad_out.data(), s.M, s.product_seed);
  const UpdateReport report =
      Reference::Int8::update_from_io(state, x.data(), grad_out.data(), s.M, params);
  const Conformance::Result updated = Conformance::result_of(state, report.skipped_rows);
  result.codes = updated.codes;
  result.scale = updated.scale;
  result.v = updated.v;
  result.skipped = updated.skipped;
  const fs::path scratch = dir / "spec.tmp";
  Conformance::write_result(scratch, result);
  for (const auto& entry : fs::directory_iterator(scratch)) {
    fs::rename(entry.path(), dir / ("spec_" + entry.path().filename().string()));
  }
  fs::remove(scratch);
  std::printf("%s: %lld x %lld, M = %lld, %lld rows skipped\n", s.name, (long long)s.out,
              (long long)s.in, (long long)s.M, (long long)report.skipped_rows);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ternary-counter-make-int-cases OUT_DIR\n");
    return 2;
  }
  Kokkos::ScopeGuard kokkos(argc, argv);
  const CaseSpec cases[] = {
      {"int_basic_c8", 40, 64, 24, 8, 0.05, 2e-4, 0.9, 1e-3, 0.0, 11u, 5u, false, false},
      {"int_lagged_clip_c11", 13, 36, 7, 11, 0.05, 2e-4, 0.9, 1e-3, 1.0, 0xFFFFFFFFu, 0u, true,
       false},
      {"int_recipe_c8", 70, 260, 130, 8, 0.003, 0.02, 0.99, 1e-3, 0.0, 12345u, 99u, false, false},
      {"int_special_values_c8", 9, 16, 6, 8, 0.05, 2e-4, 0.9, 1e-3, 0.0, 3u, 4u, false, true},
  };
  try {
    for (const CaseSpec& s : cases) make_case(argv[1], s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ternary-counter-make-int-cases: %s\n", e.what());
    return 1;
  }
  return 0;
}
