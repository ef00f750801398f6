// forward and backward_input against plain host loops in the documented order (bit-exact).
#include "Test_Common.hpp"

#include <cmath>
#include <cstring>

namespace TernaryCounter::Test {
namespace {

using HostMatrix = Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace>;

// Values spanning several binades and both signs, so a different summation order shows.
float test_value(std::uint32_t seed, std::uint32_t index) {
  const std::uint32_t h = hash_u32(seed ^ hash_u32(index));
  const float mantissa = float(h & 0xFFFF) / 65536.0f - 0.5f;
  return std::ldexp(mantissa, int((h >> 16) % 13) - 6);
}

HostMatrix random_matrix(std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  HostMatrix a("a", rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) a(r, c) = test_value(seed, std::uint32_t(r * cols + c));
  }
  return a;
}

PackedState<Kokkos::HostSpace> random_state(std::int64_t out, std::int64_t in, int C,
                                            std::uint32_t seed) {
  Kokkos::View<std::uint8_t**, Kokkos::HostSpace> codes("codes", out, in);
  Kokkos::View<float*, Kokkos::HostSpace> scale("scale", out), v("v", out);
  for (std::int64_t o = 0; o < out; ++o) {
    for (std::int64_t i = 0; i < in; ++i) {
      codes(o, i) = std::uint8_t(hash_u32(seed + std::uint32_t(o * in + i)) % code_count(C));
    }
    scale(o) = std::fabs(test_value(seed + 7, std::uint32_t(o))) + 0.01f;
    v(o) = 0.5f;
  }
  return pack_state("random", codes, scale, v, C);
}

float weight_t(const Kokkos::View<std::uint8_t**, Kokkos::HostSpace>& codes, std::int64_t o,
               std::int64_t i, int C) {
  return float(decode_ternary(codes(o, i), C));
}

HostMatrix host_forward(const PackedState<Kokkos::HostSpace>& s, const HostMatrix& x) {
  const auto codes = unpack_codes(s);
  HostMatrix y("y", x.extent(0), s.out());
  for (std::size_t m = 0; m < x.extent(0); ++m) {
    for (std::int64_t o = 0; o < s.out(); ++o) {
      float acc = 0.0f;
      for (std::int64_t i = 0; i < s.in(); ++i)
        acc = std::fma(x(m, i), weight_t(codes, o, i, s.C), acc);
      y(m, o) = s.scale(o) * acc;
    }
  }
  return y;
}

HostMatrix host_backward_input(const PackedState<Kokkos::HostSpace>& s, const HostMatrix& g) {
  const auto codes = unpack_codes(s);
  HostMatrix gx("gx", g.extent(0), s.in());
  for (std::size_t m = 0; m < g.extent(0); ++m) {
    for (std::int64_t i = 0; i < s.in(); ++i) {
      float acc = 0.0f;
      for (std::int64_t o = 0; o < s.out(); ++o) {
        acc = std::fma(g(m, o), s.scale(o) * weight_t(codes, o, i, s.C), acc);
      }
      gx(m, i) = acc;
    }
  }
  return gx;
}

void expect_bit_equal(const HostMatrix& expected, const OutputView<MemSpace>& actual_device,
                      const std::string& what) {
  const auto actual = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, actual_device);
  ASSERT_EQ(expected.extent(0), actual.extent(0));
  ASSERT_EQ(expected.extent(1), actual.extent(1));
  std::int64_t mismatches = 0;
  for (std::size_t r = 0; r < expected.extent(0); ++r) {
    for (std::size_t c = 0; c < expected.extent(1); ++c) {
      if (std::memcmp(&expected(r, c), &actual(r, c), sizeof(float)) != 0) {
        if (mismatches++ < 5) {
          ADD_FAILURE() << what << " (" << r << ", " << c << "): expected " << expected(r, c)
                        << " got " << actual(r, c);
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << what;
}

TEST(Linear, ForwardAndBackwardInputMatchHostLoopsBitExact) {
  const ExecSpace space;
  struct Shape {
    std::int64_t M, out, in;
    int C;
  };
  for (const Shape sh :
       {Shape{1, 1, 4, 2}, Shape{3, 5, 12, 8}, Shape{7, 33, 36, 11}, Shape{9, 17, 260, 8},
        Shape{64, 40, 128, 5}, Shape{0, 3, 8, 8}, Shape{5, 0, 8, 8}}) {
    const std::string what = "M=" + std::to_string(sh.M) + " out=" + std::to_string(sh.out) +
                             " in=" + std::to_string(sh.in) + " C=" + std::to_string(sh.C);
    const auto host_state = random_state(sh.out, sh.in, sh.C, 11 + std::uint32_t(sh.in));
    const auto state = create_mirror_and_copy(space, host_state);
    const HostMatrix x = random_matrix(sh.M, sh.in, 3);
    const HostMatrix g = random_matrix(sh.M, sh.out, 4);
    const auto x_d = Kokkos::create_mirror_view_and_copy(MemSpace{}, x);
    const auto g_d = Kokkos::create_mirror_view_and_copy(MemSpace{}, g);
    OutputView<MemSpace> y("y", sh.M, sh.out), gx("gx", sh.M, sh.in);
    forward(space, state, x_d, y);
    backward_input(space, state, g_d, gx);
    space.fence();
    expect_bit_equal(host_forward(host_state, x), y, "forward " + what);
    expect_bit_equal(host_backward_input(host_state, g), gx, "backward_input " + what);
  }
}

TEST(Linear, MismatchedExtentsThrowAndWriteNothing) {
  const PackedState<MemSpace> state("s", 4, 8, 8);
  OutputView<MemSpace> x("x", 2, 8), y("y", 2, 4), bad_y("bad", 3, 4), bad_x("bad", 2, 12);
  Kokkos::deep_copy(bad_y, 7.0f);
  EXPECT_THROW(forward(state, x, bad_y), std::invalid_argument);
  EXPECT_THROW(forward(state, bad_x, y), std::invalid_argument);
  EXPECT_THROW(backward_input(state, y, bad_x), std::invalid_argument);
  EXPECT_THROW(backward_input(state, x, y), std::invalid_argument);
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, bad_y);
  EXPECT_EQ(h(2, 3), 7.0f);
}

}  // namespace
}  // namespace TernaryCounter::Test
