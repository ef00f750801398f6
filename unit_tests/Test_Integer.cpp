// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The integer path (SPEC §6) against its host-loop reference, bit for bit: forward,
// backward_input and update_from_io in int8 on every shape edge, row split, workspace size, team
// size and host engine (AMX, VNNI, AVX2 and portable), non-finite and zero inputs, and the bounds.
#include "Test_Helpers.hpp"

#include "IntegerReference.hpp"
#include "engines/TernaryCounter_Capabilities.hpp"
#include "engines/TernaryCounter_HostIsa.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace TernaryCounter::Test {
namespace {

/// Runs the body once per engine of the integer products: on hosts, each host engine (this
/// CPU's best: AMX or VNNI; VNNI; AVX2; the portable engine) as TERNARYCOUNTER_HOST_ISA would
/// choose it; on CUDA, the tensor-core engine and the vendor GEMM (TERNARYCOUNTER_GPU_INT8_GEMM);
/// other backends have one engine.
template <class Body>
void for_each_engine(Body body) {
  if constexpr (Impl::Capabilities<ExecSpace>::tensor_core_int8) {
    const Impl::GpuInt8Gemm saved = Impl::gpu_int8_gemm();
    for (const Impl::GpuInt8Gemm engine :
         {Impl::GpuInt8Gemm::tensor_cores, Impl::GpuInt8Gemm::vendor}) {
      Impl::force_gpu_int8_gemm(engine);
      SCOPED_TRACE(engine == Impl::GpuInt8Gemm::vendor ? "GPU engine vendor"
                                                       : "GPU engine tensor_cores");
      body();
    }
    Impl::force_gpu_int8_gemm(saved);
    return;
  } else if constexpr (!std::is_same_v<MemSpace, Kokkos::HostSpace>) {
    body();  // one GPU engine
    return;
  }
  const char* previous = std::getenv("TERNARYCOUNTER_HOST_ISA");
  const std::optional<std::string> saved =
      previous ? std::optional<std::string>(previous) : std::nullopt;
  for (const char* engine : {"default", "avx512", "avx2", "baseline"}) {
    if (std::string(engine) != "default") Impl::force_host_isa(engine);
    SCOPED_TRACE(std::string("engine ") + engine);
    body();
  }
  Impl::force_host_isa(saved ? saved->c_str() : nullptr);
}

std::vector<float> random_values(std::int64_t n, SplitMix64& rng, float lo = -2.0f,
                                 float hi = 2.0f) {
  std::vector<float> v(n);
  for (auto& e : v) e = rng.uniform(lo, hi);
  return v;
}

std::vector<float> to_vector(const DeviceMatrix& d) {
  std::vector<float> v(d.extent(0) * d.extent(1));
  Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace,
               Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      h(v.data(), d.extent(0), d.extent(1));
  Kokkos::deep_copy(h, d);
  return v;
}

::testing::AssertionResult same_bits(const std::vector<float>& got,
                                     const std::vector<float>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (std::size_t j = 0; j < got.size(); ++j) {
    if (bits(got[j]) != bits(want[j])) {
      return ::testing::AssertionFailure()
             << "element " << j << ": " << got[j] << " but the reference gives " << want[j];
    }
  }
  return ::testing::AssertionSuccess();
}

struct Shape {
  std::int64_t M, out, in;
};

const std::vector<Shape>& shapes() {
  // Among them, forward of few samples with a depth of a multiple of 16 (the GPUs' few-sample
  // kernel: 1, 2, 4, 8 and 16 sums per row, a last team of fewer than 4 rows).
  static const std::vector<Shape> s = {{1, 1, 4},    {1, 37, 64},   {2, 3, 16},
                                       {3, 5, 132},  {5, 9, 48},    {16, 70, 96},
                                       {17, 70, 36}, {64, 33, 260}, {130, 40, 8}};
  return s;
}

/// shapes(), and products past the GPUs' few-sample kernels over a depth of a multiple of 16 (the
/// tensor-core engine on CUDA): several 128 x 128 output tiles, short last tiles in both
/// directions, a depth padded within and past the last 64-deep slice.
std::vector<Shape> product_shapes() {
  std::vector<Shape> s = shapes();
  for (const Shape extra : {Shape{77, 200, 208}, Shape{300, 130, 144}, Shape{129, 129, 16}}) {
    s.push_back(extra);
  }
  return s;
}

TEST(Integer, ForwardAndBackwardInputMatchTheReference) {
  SplitMix64 rng(42);
  for (const Shape& sh : product_shapes()) {
    SCOPED_TRACE("M " + std::to_string(sh.M) + " out " + std::to_string(sh.out) + " in " +
                 std::to_string(sh.in));
    const HostState host = random_state(sh.out, sh.in, 8, rng);
    const std::vector<float> x = random_values(sh.M * sh.in, rng);
    const std::vector<float> g = random_values(sh.M * sh.out, rng, -0.01f, 0.01f);
    const std::uint32_t seed = 1234567u;
    const std::vector<float> want_y = Reference::Int8::forward(host, x.data(), sh.M);
    const std::vector<float> want_gx = Reference::Int8::backward_input(host, g.data(), sh.M, seed);
    for_each_engine([&] {
      const DeviceState state = to_device(host);
      DeviceMatrix y("y", sh.M, sh.out), gx("gx", sh.M, sh.in);
      forward(ExecSpace{}, state, to_device(x, sh.M, sh.in), y, {Precision::int8});
      backward_input(ExecSpace{}, state, to_device(g, sh.M, sh.out), gx, {Precision::int8, seed});
      EXPECT_TRUE(same_bits(to_vector(y), want_y));
      EXPECT_TRUE(same_bits(to_vector(gx), want_gx));
    });
  }
}

// The scratch kept between calls is reported: after an int8 forward, at least its quantized x.
TEST(Integer, ScratchBytesHeldCountTheKeptBuffers) {
  SplitMix64 rng(6);
  const std::int64_t M = 64, out = 8, in = 512;
  const DeviceState state = to_device(random_state(out, in, 8, rng));
  const DeviceMatrix y("y", M, out);
  forward(ExecSpace{}, state, to_device(random_values(M * in, rng), M, in), y, {Precision::int8});
  ExecSpace().fence();
  EXPECT_GE(scratch_bytes_held<MemSpace>(), M * in);
}

TEST(Integer, ForwardIsCloseToFp32) {
  // Nearest rounding moves each x by at most half a step (a_m / 254), so each output moves by
  // at most scale * in * a_m / 254 (plus float rounding): a bound that a wrong scale or sign
  // breaks by orders of magnitude.
  SplitMix64 rng(5);
  const std::int64_t M = 8, out = 48, in = 256;
  const HostState host = random_state(out, in, 8, rng);
  const std::vector<float> x = random_values(M * in, rng);
  const DeviceState state = to_device(host);
  DeviceMatrix y8("y8", M, out), y32("y32", M, out);
  const DeviceMatrix xd = to_device(x, M, in);
  forward(ExecSpace{}, state, xd, y8, {Precision::int8});
  forward(ExecSpace{}, state, xd, y32);
  const std::vector<float> a = to_vector(y8), b = to_vector(y32);
  for (std::int64_t m = 0; m < M; ++m) {
    float amax = 0.0f;
    for (std::int64_t i = 0; i < in; ++i) amax = std::max(amax, std::fabs(x[m * in + i]));
    for (std::int64_t o = 0; o < out; ++o) {
      const double bound = host.scale(o) * in * amax / 254.0 * 1.01 + 1e-5;
      EXPECT_LE(std::fabs(a[m * out + o] - b[m * out + o]), bound) << "m " << m << " o " << o;
    }
  }
}

TEST(Integer, UpdateFromIOMatchesTheReferenceInEverySplit) {
  SplitMix64 rng(7);
  for (const Shape& sh : shapes()) {
    SCOPED_TRACE("M " + std::to_string(sh.M) + " out " + std::to_string(sh.out) + " in " +
                 std::to_string(sh.in));
    const HostState start = random_state(sh.out, sh.in, 8, rng);
    const std::vector<float> x = random_values(sh.M * sh.in, rng);
    const std::vector<float> g = random_values(sh.M * sh.out, rng, -0.5f, 0.5f);
    UpdateParams params = counter_moving_params(0xC0FFEEu + std::uint32_t(sh.out));
    const HostState want = create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, start);
    const UpdateReport want_report =
        Reference::Int8::update_from_io(want, x.data(), g.data(), sh.M, params);
    const DeviceMatrix xd = to_device(x, sh.M, sh.in), gd = to_device(g, sh.M, sh.out);
    for_each_engine([&] {
      for (const std::int64_t workspace_rows :
           {std::int64_t(0), std::int64_t(1), std::int64_t(3)}) {
        for (const std::int64_t split : {std::int64_t(0), (sh.out + 1) / 2}) {
          SCOPED_TRACE("workspace rows " + std::to_string(workspace_rows) + ", split " +
                       std::to_string(split));
          const DeviceState state = to_device(start);
          std::int64_t skipped = 0;
          const std::int64_t first_part = split == 0 ? sh.out : split;
          for (std::int64_t first = 0; first < sh.out; first += first_part) {
            const std::int64_t last = std::min(sh.out, first + first_part);
            UpdateParams p = params;
            p.row_offset = first;
            const auto part = state.row_range(first, last);
            const auto g_part = Kokkos::subview(gd, Kokkos::ALL, std::make_pair(first, last));
            const DeviceMatrix g_copy("g_copy", sh.M, last - first);
            Kokkos::deep_copy(g_copy, g_part);
            if (workspace_rows == 0) {
              skipped +=
                  update_from_io(ExecSpace{}, part, xd, g_copy, p, Precision::int8).skipped_rows;
            } else {
              const DeviceMatrix ws("ws", workspace_rows, sh.in);
              skipped += update_from_io(ExecSpace{}, part, xd, g_copy, p, ws, Precision::int8)
                             .skipped_rows;
            }
          }
          EXPECT_EQ(skipped, want_report.skipped_rows);
          EXPECT_TRUE(same_state(to_host(state), want));
        }
      }
    });
  }
}

// The longest sums at the int8 bound: |q| = 127, |t| = 1 and every term of a sum of one sign, in
// all three products (the AVX2 engine's int16 partial sums at their largest, HostInt8Avx2.hpp).
TEST(Integer, ExtremeSumsAreExact) {
  const std::int64_t M = 136, out = 260, in = 1032;
  const int C = 8;
  Kokkos::View<std::uint8_t**, Kokkos::HostSpace> codes("codes", out, in);
  Kokkos::View<float*, Kokkos::HostSpace> scale("scale", out), v("v", out);
  for (std::int64_t o = 0; o < out; ++o) {
    for (std::int64_t i = 0; i < in; ++i) {
      codes(o, i) = std::uint8_t(o % 2 == 0 ? code_count(C) - 1 : 0);  // t = 1, -1
    }
    scale(o) = 0.5f;
    v(o) = 0.01f;
  }
  const HostState start = pack_state("TernaryCounter::test::extreme_state", codes, scale, v, C);
  std::vector<float> x(M * in), g(M * out);
  for (std::int64_t m = 0; m < M; ++m) {
    const float sign = m % 3 == 0 ? -1.0f : 1.0f;
    for (std::int64_t i = 0; i < in; ++i) x[m * in + i] = sign;
    for (std::int64_t o = 0; o < out; ++o) g[m * out + o] = 0.25f * sign * (o % 2 == 0 ? 1 : -1);
  }
  const std::uint32_t seed = 77u;
  const std::vector<float> want_y = Reference::Int8::forward(start, x.data(), M);
  const std::vector<float> want_gx = Reference::Int8::backward_input(start, g.data(), M, seed);
  const UpdateParams params = counter_moving_params(5);
  const HostState want = create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, start);
  Reference::Int8::update_from_io(want, x.data(), g.data(), M, params);
  for_each_engine([&] {
    const DeviceState state = to_device(start);
    DeviceMatrix y("y", M, out), gx("gx", M, in);
    forward(ExecSpace{}, state, to_device(x, M, in), y, {Precision::int8});
    backward_input(ExecSpace{}, state, to_device(g, M, out), gx, {Precision::int8, seed});
    EXPECT_TRUE(same_bits(to_vector(y), want_y));
    EXPECT_TRUE(same_bits(to_vector(gx), want_gx));
    update_from_io(ExecSpace{}, state, to_device(x, M, in), to_device(g, M, out), params,
                   Precision::int8);
    EXPECT_TRUE(same_state(to_host(state), want));
  });
}

TEST(Integer, NonFiniteAndZeroInputs) {
  SplitMix64 rng(11);
  const std::int64_t M = 6, out = 9, in = 144;  // a 128-column block of the host quantizer + 16
  const HostState start = random_state(out, in, 8, rng);
  std::vector<float> x = random_values(M * in, rng);
  std::vector<float> g = random_values(M * out, rng, -0.5f, 0.5f);
  for (std::int64_t m = 0; m < M; ++m) {
    g[m * out + 2] = 0.0f;  // a zero output column: g row 2 = 0
    x[m * in + 9] = 0.0f;   // a zero input column
  }
  g[3 * out + 5] = std::numeric_limits<float>::infinity();   // row 5 skipped
  g[1 * out + 7] = std::numeric_limits<float>::quiet_NaN();  // row 7 skipped
  const UpdateParams params = counter_moving_params(99);
  const HostState want = create_mirror_and_copy(Kokkos::DefaultHostExecutionSpace{}, start);
  const UpdateReport report = Reference::Int8::update_from_io(want, x.data(), g.data(), M, params);
  EXPECT_EQ(report.skipped_rows, 2);
  for_each_engine([&] {
    const DeviceState state = to_device(start);
    const UpdateReport got = update_from_io(ExecSpace{}, state, to_device(x, M, in),
                                            to_device(g, M, out), params, Precision::int8);
    EXPECT_EQ(got.skipped_rows, 2);
    EXPECT_TRUE(same_state(to_host(state), want));
  });
  // A non-finite input column reaches every row: all skipped, nothing changed.
  x[4 * in + 3] = std::numeric_limits<float>::quiet_NaN();
  for_each_engine([&] {
    const DeviceState state = to_device(start);
    const UpdateReport got = update_from_io(ExecSpace{}, state, to_device(x, M, in),
                                            to_device(g, M, out), params, Precision::int8);
    EXPECT_EQ(got.skipped_rows, out);
    EXPECT_TRUE(same_state(to_host(state), start));
    // forward: the sample with the NaN gives a NaN row, the others stay finite.
    DeviceMatrix y("y", M, out);
    forward(ExecSpace{}, state, to_device(x, M, in), y, {Precision::int8});
    const std::vector<float> yh = to_vector(y);
    for (std::int64_t m = 0; m < M; ++m) {
      for (std::int64_t o = 0; o < out; ++o) {
        EXPECT_EQ(std::isnan(yh[m * out + o]), m == 4) << "m " << m << " o " << o;
      }
    }
  });
}

TEST(Integer, BoundsAreCheckedBeforeAnyWork) {
  SplitMix64 rng(3);
  const std::int64_t M = 133145, out = 2, in = 4;
  const HostState start = random_state(out, in, 8, rng);
  const DeviceState state = to_device(start);
  const DeviceMatrix x("x", M, in), g("g", M, out);
  try {
    update_from_io(ExecSpace{}, state, x, g, counter_moving_params(1), Precision::int8);
    FAIL() << "an int8 update of 133145 samples must throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("133144"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(same_state(to_host(state), start));
  EXPECT_THROW(
      update_from_io(ExecSpace{}, state, x, g, counter_moving_params(1), static_cast<Precision>(7)),
      std::invalid_argument);
  EXPECT_TRUE(same_state(to_host(state), start));
}

}  // namespace
}  // namespace TernaryCounter::Test
