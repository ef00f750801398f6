// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// bfloat16 and float16 Views in the three calls: widening is exact, rounding is to nearest with
// ties to even, and every call on 16-bit inputs gives the bits of the same call on the inputs
// widened to float (y and grad_x rounded to the input's type where they are 16-bit), in fp32 and
// int8, blocking and asynchronous, and through TernaryLinear.
#include "Test_Common.hpp"
#include "Test_Helpers.hpp"

#include "engines/TernaryCounter_Capabilities.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace TernaryCounter::Test {
namespace {

template <class T>
using HalfMatrix = Kokkos::View<T**, Kokkos::LayoutRight, MemSpace>;

template <class T>
constexpr const char* type_name() {
  return std::is_same_v<T, bfloat16> ? "bfloat16" : "float16";
}

TEST(HalfFloats, WideningIsExactAndRoundingInvertsIt) {
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    const bfloat16 h{std::uint16_t(b)};
    const float16 f{std::uint16_t(b)};
    if (!std::isnan(widen(h))) ASSERT_EQ(narrow<bfloat16>(widen(h)).bits, b) << std::hex << b;
    if (!std::isnan(widen(f))) ASSERT_EQ(narrow<float16>(widen(f)).bits, b) << std::hex << b;
    // The float16 value from its fields, in double: sign, exponent, mantissa.
    const int e = int(b >> 10 & 0x1F), m = int(b & 0x3FF);
    if (e != 0x1F) {
      const double magnitude = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
      ASSERT_EQ(double(widen(f)), (b & 0x8000u) ? -magnitude : magnitude) << std::hex << b;
    }
  }
  EXPECT_TRUE(std::isnan(widen(narrow<float16>(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(widen(narrow<bfloat16>(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(HalfFloats, RoundsToNearestTiesToEven) {
  // float16: the largest finite value, the halfway point to infinity, the subnormal edges.
  EXPECT_EQ(narrow<float16>(65504.0f).bits, 0x7BFF);
  EXPECT_EQ(narrow<float16>(65519.996f).bits, 0x7BFF);
  EXPECT_EQ(narrow<float16>(65520.0f).bits, 0x7C00);
  EXPECT_EQ(narrow<float16>(-1e6f).bits, 0xFC00);
  EXPECT_EQ(narrow<float16>(0x1p-25f).bits, 0x0000);  // halfway to the least subnormal: even
  EXPECT_EQ(narrow<float16>(0x1.8p-25f).bits, 0x0001);
  EXPECT_EQ(narrow<float16>(0x1.8p-24f).bits, 0x0002);         // 1.5 ulp: ties to the even 2
  EXPECT_EQ(narrow<float16>(0x1.ffcp-15f).bits, 0x0400);       // rounds up into the normals
  EXPECT_EQ(narrow<float16>(1.0f + 0x1p-11f).bits, 0x3C00);    // tie: even mantissa
  EXPECT_EQ(narrow<float16>(1.0f + 0x1.8p-10f).bits, 0x3C02);  // tie: up to even
  // bfloat16: ties to even, carries into the exponent, infinity.
  EXPECT_EQ(narrow<bfloat16>(1.0f + 0x1p-8f).bits, 0x3F80);
  EXPECT_EQ(narrow<bfloat16>(1.0f + 0x1.8p-7f).bits, 0x3F82);
  EXPECT_EQ(narrow<bfloat16>(0x1.ffp0f).bits, 0x4000);
  EXPECT_EQ(narrow<bfloat16>(std::numeric_limits<float>::max()).bits, 0x7F80);
}

/// Random values of type T, and their widened floats.
template <class T>
struct HalfData {
  HalfMatrix<T> half;
  DeviceMatrix widened;
};

template <class T>
HalfData<T> half_data(const char* label, std::int64_t rows, std::int64_t cols, float amplitude,
                      SplitMix64& rng) {
  const Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace> h("half", rows, cols);
  const Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> w("widened", rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      h(r, c) = narrow<T>(rng.uniform(-amplitude, amplitude));
      w(r, c) = widen(h(r, c));
    }
  }
  HalfData<T> d{HalfMatrix<T>(label, rows, cols), DeviceMatrix(label, rows, cols)};
  Kokkos::deep_copy(d.half, h);
  Kokkos::deep_copy(d.widened, w);
  return d;
}

/// Whether a 16-bit result holds the float result rounded to T, element by element.
template <class T>
::testing::AssertionResult rounded_from(const HalfMatrix<T>& got, const DeviceMatrix& want) {
  const auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, got);
  const auto w = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, want);
  for (std::size_t k = 0; k < w.size(); ++k) {
    if (g.data()[k].bits != narrow<T>(w.data()[k]).bits) {
      return ::testing::AssertionFailure() << "element " << k << ": " << g.data()[k].bits << " but "
                                           << narrow<T>(w.data()[k]).bits;
    }
  }
  return ::testing::AssertionSuccess();
}

template <class T>
void check_calls_match_widened_inputs(Precision precision) {
  SCOPED_TRACE(std::string(type_name<T>()) + ", " + precision_name(precision));
  SplitMix64 rng(std::is_same_v<T, bfloat16> ? 21 : 22);
  // A few samples (the few-sample engines) and many (the GEMM engines).
  for (const std::int64_t M : {std::int64_t(3), std::int64_t(70)}) {
    SCOPED_TRACE("M " + std::to_string(M));
    const std::int64_t out = 24, in = 40;
    const HostState start = random_state(out, in, 8, rng);
    const DeviceState state = to_device(start);
    const HalfData<T> x = half_data<T>("x", M, in, 2.0f, rng);
    const HalfData<T> g = half_data<T>("grad_out", M, out, 0.5f, rng);
    const ProductOptions options{precision, 7};

    const DeviceMatrix y_want("y_want", M, out), y_float("y_float", M, out);
    const HalfMatrix<T> y_half("y_half", M, out);
    forward(ExecSpace{}, state, x.widened, y_want, options);
    forward(ExecSpace{}, state, x.half, y_float, options);
    forward(ExecSpace{}, state, x.half, y_half, options);
    EXPECT_TRUE(same_bits(y_float, y_want));
    EXPECT_TRUE(rounded_from(y_half, y_want));

    const DeviceMatrix gx_want("gx_want", M, in), gx_float("gx_float", M, in);
    const HalfMatrix<T> gx_half("gx_half", M, in);
    backward_input(ExecSpace{}, state, g.widened, gx_want, options);
    backward_input(ExecSpace{}, state, g.half, gx_float, options);
    backward_input(ExecSpace{}, state, g.half, gx_half, options);
    EXPECT_TRUE(same_bits(gx_float, gx_want));
    EXPECT_TRUE(rounded_from(gx_half, gx_want));

    UpdateParams params;
    params.lr = 0.2;
    params.lr_scale = 1e-3;
    params.seed = 99;
    const DeviceState want = to_device(start), blocking = to_device(start),
                      with_workspace = to_device(start), asynchronous = to_device(start);
    const UpdateReport r =
        update_from_io(ExecSpace{}, want, x.widened, g.widened, params, precision);
    EXPECT_EQ(update_from_io(ExecSpace{}, blocking, x.half, g.half, params, precision).skipped_rows,
              r.skipped_rows);
    const DeviceMatrix workspace("workspace", 5, in);
    update_from_io(ExecSpace{}, with_workspace, x.half, g.half, params, workspace, precision);
    const SkippedRowsView<MemSpace> skipped("skipped");
    update_from_io(ExecSpace{}, asynchronous, x.half, g.half, params, workspace, skipped,
                   precision);
    ExecSpace{}.fence();
    EXPECT_TRUE(same_state(to_host(blocking), to_host(want)));
    EXPECT_TRUE(same_state(to_host(with_workspace), to_host(want)));
    EXPECT_TRUE(same_state(to_host(asynchronous), to_host(want)));
    EXPECT_FALSE(same_state(to_host(want), start)) << "the update changed nothing";
  }
}

TEST(HalfViews, Bfloat16CallsGiveTheBitsOfTheirWidening) {
  check_calls_match_widened_inputs<bfloat16>(Precision::fp32);
  check_calls_match_widened_inputs<bfloat16>(Precision::int8);
}

TEST(HalfViews, Float16CallsGiveTheBitsOfTheirWidening) {
  check_calls_match_widened_inputs<float16>(Precision::fp32);
  check_calls_match_widened_inputs<float16>(Precision::int8);
}

// The layer takes 16-bit Views too: a step on bfloat16 data is the step on its widening.
TEST(HalfViews, TernaryLinearStepsOnBfloat16) {
  SplitMix64 rng(5);
  UpdateParams params;
  params.lr = 0.1;
  TernaryLinear<ExecSpace> half(ExecSpace{}, "half", 12, 16, params, 3, Precision::int8);
  TernaryLinear<ExecSpace> wide(ExecSpace{}, "wide", 12, 16, params, 3, Precision::int8);
  const HalfData<bfloat16> x = half_data<bfloat16>("x", 9, 16, 1.0f, rng);
  const HalfData<bfloat16> g = half_data<bfloat16>("g", 9, 12, 0.3f, rng);
  const HalfMatrix<bfloat16> y("y", 9, 12), gx("gx", 9, 16);
  const DeviceMatrix y_want("y_want", 9, 12), gx_want("gx_want", 9, 16);
  half.forward(x.half, y);
  wide.forward(x.widened, y_want);
  half.backward_input(g.half, gx);
  wide.backward_input(g.widened, gx_want);
  half.update_from_io(x.half, g.half);
  wide.update_from_io(x.widened, g.widened);
  EXPECT_TRUE(rounded_from(y, y_want));
  EXPECT_TRUE(rounded_from(gx, gx_want));
  EXPECT_EQ(half.step(), 1);
  EXPECT_TRUE(same_state(to_host(half.state()), to_host(wide.state())));
}

// 16-bit int8 outputs too large for one block of the vendor GEMM's int32 sums (64 MiB) are
// finished block by block: 8192 samples into 4096 columns, in forward and backward_input, on the
// vendor GEMM and on the tensor-core engine (which needs no blocks). Host backends have no vendor
// GEMM: the case runs where the memory is a GPU's.
TEST(HalfViews, Int8OutputsOfManyVendorBlocks) {
  if constexpr (std::is_same_v<MemSpace, Kokkos::HostSpace>) {
    GTEST_SKIP() << "no vendor int8 GEMM on host backends";
  } else {
    SplitMix64 rng(7);
    const std::int64_t M = 8192, wide = 4096, narrow_dim = 32;
    const ProductOptions options{Precision::int8, 5};
    const DeviceState tall = to_device(random_state(wide, narrow_dim, 8, rng));  // out 4096
    const DeviceState flat = to_device(random_state(narrow_dim, wide, 8, rng));  // in 4096
    const HalfData<bfloat16> x = half_data<bfloat16>("x", M, narrow_dim, 2.0f, rng);
    const HalfData<bfloat16> g = half_data<bfloat16>("g", M, narrow_dim, 0.5f, rng);
    const DeviceMatrix y_want("y_want", M, wide), gx_want("gx_want", M, wide);
    const HalfMatrix<bfloat16> y("y", M, wide), gx("gx", M, wide);
    const Impl::GpuInt8Gemm saved = Impl::gpu_int8_gemm();
    for (const Impl::GpuInt8Gemm engine :
         {Impl::GpuInt8Gemm::vendor, Impl::GpuInt8Gemm::tensor_cores}) {
      SCOPED_TRACE(engine == Impl::GpuInt8Gemm::vendor ? "vendor" : "tensor_cores");
      Impl::force_gpu_int8_gemm(engine);
      forward(ExecSpace{}, tall, x.widened, y_want, options);
      forward(ExecSpace{}, tall, x.half, y, options);
      backward_input(ExecSpace{}, flat, g.widened, gx_want, options);
      backward_input(ExecSpace{}, flat, g.half, gx, options);
      EXPECT_TRUE(rounded_from(y, y_want));
      EXPECT_TRUE(rounded_from(gx, gx_want));
    }
    Impl::force_gpu_int8_gemm(saved);
  }
}

// Wrong extents are refused as for float inputs, before anything changes.
TEST(HalfViews, BadExtentsThrow) {
  SplitMix64 rng(6);
  const DeviceState state = to_device(random_state(8, 12, 8, rng));
  const HalfMatrix<float16> x("x", 4, 16), y("y", 4, 8);
  EXPECT_THROW(forward(ExecSpace{}, state, x, y), std::invalid_argument);
  const HalfMatrix<float16> g("g", 4, 8), x_ok("x", 4, 12);
  EXPECT_THROW(update_from_io(ExecSpace{}, state, x, g, UpdateParams{}), std::invalid_argument);
  EXPECT_NO_THROW(update_from_io(ExecSpace{}, state, x_ok, g, UpdateParams{}));
}

}  // namespace
}  // namespace TernaryCounter::Test
