// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ConformanceCase.hpp"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace TernaryCounter::Conformance {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const fs::path& file, const std::string& what) {
  throw std::runtime_error(file.string() + ": " + what);
}

template <class T>
std::vector<T> read_binary(const fs::path& file, std::int64_t count) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, "cannot open");
  in.seekg(0, std::ios::end);
  const std::int64_t bytes = in.tellg();
  if (bytes != count * std::int64_t(sizeof(T))) {
    fail(file,
         "has " + std::to_string(bytes) + " bytes, expected " + std::to_string(count * sizeof(T)));
  }
  in.seekg(0);
  std::vector<T> data(count);
  in.read(reinterpret_cast<char*>(data.data()), bytes);
  if (!in) fail(file, "read error");
  return data;
}

template <class T>
void write_binary(const fs::path& file, const std::vector<T>& data) {
  std::ofstream out(file, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size() * sizeof(T)));
  if (!out) fail(file, "write error");
}

std::int64_t read_integer_file(const fs::path& file) {
  std::ifstream in(file);
  std::int64_t value = 0;
  if (!(in >> value)) fail(file, "does not hold an integer");
  return value;
}

}  // namespace

Case read_case(const fs::path& dir) {
  const fs::path file = dir / "case.txt";
  std::ifstream in(file);
  if (!in) fail(file, "cannot open (is this a conformance case folder?)");
  std::map<std::string, std::string> kv;
  std::string key, value;
  while (in >> key >> value) kv[key] = value;
  const auto get = [&](const char* name) -> const std::string& {
    const auto it = kv.find(name);
    if (it == kv.end()) fail(file, std::string("missing key '") + name + "'");
    return it->second;
  };
  const auto number = [&](const char* name) {
    try {
      std::size_t used = 0;
      const double v = std::stod(get(name), &used);
      if (used != get(name).size()) throw std::invalid_argument(name);
      return v;
    } catch (const std::logic_error&) {
      fail(file, std::string("key '") + name + "' has a bad value '" + get(name) + "'");
    }
  };
  Case c;
  c.kind = get("kind");
  if (c.kind != "dense" && c.kind != "from_io") fail(file, "kind must be dense or from_io");
  // Sizes are whole numbers below 2^31 and the arrays they make hold at most 2^40 values, checked
  // before any array is read or made (a wrapped product would size an array too small).
  const auto size = [&](const char* name) {
    const double v = number(name);
    if (!(v >= 0 && v <= 2147483647.0) || v != std::floor(v)) {
      fail(file, std::string("'") + name + "' must be an integer in [0, 2^31)");
    }
    return std::int64_t(v);
  };
  c.out = size("out");
  c.in = size("in");
  c.M = size("M");
  for (const auto& [rows, cols] :
       {std::pair{c.out, c.in}, std::pair{c.M, c.in}, std::pair{c.M, c.out}}) {
    if (cols != 0 && rows > (std::int64_t(1) << 40) / cols) {
      fail(file, "out, in and M make an array of " + std::to_string(rows) + " x " +
                     std::to_string(cols) + " values, more than 2^40");
    }
  }
  c.params.C = int(number("C"));
  c.params.lr = number("lr");
  c.params.lr_scale = number("lr_scale");
  c.params.rms_beta = number("rms_beta");
  c.params.rms_eps = number("rms_eps");
  c.params.clip = number("clip");
  const double seed = number("seed");
  if (seed < 0 || seed > 4294967295.0) fail(file, "seed must be in [0, 2^32)");
  c.params.seed = std::uint32_t(seed);
  c.params.lagged = number("lagged") != 0;
  if (kv.count("precision")) {
    const std::string precision = get("precision");
    if (precision != "fp32" && precision != "int8") fail(file, "precision must be fp32 or int8");
    if (precision == "int8" && c.kind != "from_io") fail(file, "int8 cases are from_io cases");
    c.precision = precision == "int8" ? Precision::int8 : Precision::fp32;
  }
  if (kv.count("product_seed")) {
    const double product_seed = number("product_seed");
    if (product_seed < 0 || product_seed > 4294967295.0) {
      fail(file, "product_seed must be in [0, 2^32)");
    }
    c.product_seed = std::uint32_t(product_seed);
  }

  c.codes_in = read_binary<std::uint8_t>(dir / "codes_in.u8", c.out * c.in);
  c.scale_in = read_binary<float>(dir / "scale_in.f32", c.out);
  c.v_in = read_binary<float>(dir / "v_in.f32", c.out);
  if (c.kind == "dense") {
    c.grad_w = read_binary<float>(dir / "grad_w.f32", c.out * c.in);
  } else {
    c.x = read_binary<float>(dir / "x.f32", c.M * c.in);
    c.grad_out = read_binary<float>(dir / "grad_out.f32", c.M * c.out);
  }
  return c;
}

PackedState<Kokkos::HostSpace> Case::state() const {
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  Kokkos::View<const std::uint8_t**, Kokkos::HostSpace, Unmanaged> codes(codes_in.data(), out, in);
  Kokkos::View<const float*, Kokkos::HostSpace, Unmanaged> scale(scale_in.data(), out);
  Kokkos::View<const float*, Kokkos::HostSpace, Unmanaged> v(v_in.data(), out);
  return pack_state("TernaryCounter::conformance::state", codes, scale, v, params.C);
}

Result read_result(const fs::path& dir, const Case& c, const std::string& prefix) {
  Result r;
  r.codes = read_binary<std::uint8_t>(dir / (prefix + "codes_out.u8"), c.out * c.in);
  r.scale = read_binary<float>(dir / (prefix + "scale_out.f32"), c.out);
  r.v = read_binary<float>(dir / (prefix + "v_out.f32"), c.out);
  const fs::path skipped = dir / (prefix + "skipped.txt");
  r.skipped = fs::exists(skipped) ? read_integer_file(skipped) : 0;
  if (c.precision == Precision::int8) {
    r.y = read_binary<float>(dir / (prefix + "y_out.f32"), c.M * c.out);
    r.grad_x = read_binary<float>(dir / (prefix + "grad_x_out.f32"), c.M * c.in);
  }
  return r;
}

bool has_reference_result(const fs::path& dir) {
  return fs::exists(dir / "codes_out.u8");
}

Result result_of(const PackedState<Kokkos::HostSpace>& state, std::int64_t skipped) {
  Result r;
  const auto codes = unpack_codes(state);
  r.codes.assign(codes.data(), codes.data() + codes.size());
  r.scale.assign(state.scale.data(), state.scale.data() + state.scale.size());
  r.v.assign(state.v.data(), state.v.data() + state.v.size());
  r.skipped = skipped;
  return r;
}

void write_result(const fs::path& dir, const Result& result) {
  fs::create_directories(dir);
  write_binary(dir / "codes_out.u8", result.codes);
  write_binary(dir / "scale_out.f32", result.scale);
  write_binary(dir / "v_out.f32", result.v);
  std::ofstream(dir / "skipped.txt") << result.skipped << "\n";
  if (!result.y.empty()) write_binary(dir / "y_out.f32", result.y);
  if (!result.grad_x.empty()) write_binary(dir / "grad_x_out.f32", result.grad_x);
}

}  // namespace TernaryCounter::Conformance
