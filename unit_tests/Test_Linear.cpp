// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// forward and backward_input against plain host loops in the documented order (bit-exact).
#include "Test_Common.hpp"

#include <cmath>
#include <cstring>
#include <vector>

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

// One element of each product in the documented order.
float host_forward_element(const PackedState<Kokkos::HostSpace>& s,
                           const Kokkos::View<std::uint8_t**, Kokkos::HostSpace>& codes,
                           const HostMatrix& x, std::int64_t m, std::int64_t o) {
  float acc = 0.0f;
  for (std::int64_t i = 0; i < s.in(); ++i)
    acc = std::fma(x(m, i), weight_t(codes, o, i, s.C), acc);
  return s.scale(o) * acc;
}

float host_backward_input_element(const PackedState<Kokkos::HostSpace>& s,
                                  const Kokkos::View<std::uint8_t**, Kokkos::HostSpace>& codes,
                                  const HostMatrix& g, std::int64_t m, std::int64_t i) {
  float acc = 0.0f;
  for (std::int64_t o = 0; o < s.out(); ++o) {
    acc = std::fma(g(m, o), s.scale(o) * weight_t(codes, o, i, s.C), acc);
  }
  return acc;
}

/// Compares every element of `actual` whose row is in `rows` or whose column is in `cols` (all
/// of them when both are empty) with element(r, c) bit for bit.
template <class Element>
void expect_bit_equal(const Element& element, const OutputView<MemSpace>& actual_device,
                      const std::vector<std::int64_t>& rows, const std::vector<std::int64_t>& cols,
                      const std::string& what) {
  const auto actual = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, actual_device);
  const std::int64_t R = actual.extent(0), C = actual.extent(1);
  std::vector<char> row_checked(R, rows.empty() && cols.empty()), col_checked(C, 0);
  for (const std::int64_t r : rows) row_checked[r] = 1;
  for (const std::int64_t c : cols) col_checked[c] = 1;
  std::int64_t mismatches = 0, compared = 0;
  for (std::int64_t r = 0; r < R; ++r) {
    for (std::int64_t c = 0; c < C; ++c) {
      if (!row_checked[r] && !col_checked[c]) continue;
      ++compared;
      const float expected = element(r, c);
      if (std::memcmp(&expected, &actual(r, c), sizeof(float)) != 0 && mismatches++ < 5) {
        ADD_FAILURE() << what << " (" << r << ", " << c << "): expected " << expected << " got "
                      << actual(r, c);
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << what << " (" << compared << " elements compared)";
}

struct LinearShape {
  std::int64_t M, out, in;
  int C;
};

/// Runs forward and backward_input on the test backend and compares them with the host loops:
/// every element, or the rows and columns sampled by `sample` (for shapes whose full check would
/// take the host loops too long).
void check_linear(const LinearShape& sh, bool sample) {
  const ExecSpace space;
  const std::string what = "M=" + std::to_string(sh.M) + " out=" + std::to_string(sh.out) +
                           " in=" + std::to_string(sh.in) + " C=" + std::to_string(sh.C);
  const auto host_state = random_state(sh.out, sh.in, sh.C, 11 + std::uint32_t(sh.in));
  const auto codes = unpack_codes(host_state);
  const auto state = create_mirror_and_copy(space, host_state);
  const HostMatrix x = random_matrix(sh.M, sh.in, 3);
  const HostMatrix g = random_matrix(sh.M, sh.out, 4);
  const auto x_d = Kokkos::create_mirror_view_and_copy(MemSpace{}, x);
  const auto g_d = Kokkos::create_mirror_view_and_copy(MemSpace{}, g);
  OutputView<MemSpace> y("y", sh.M, sh.out), gx("gx", sh.M, sh.in);
  forward(space, state, x_d, y);
  backward_input(space, state, g_d, gx);
  space.fence();
  // Samples: both sides of every 64-element boundary (the tile sizes of every backend are
  // multiples of 64 or 64 itself) and the last index.
  const auto samples = [&](std::int64_t n) {
    std::vector<std::int64_t> v;
    if (!sample) return v;
    for (std::int64_t k = 0; k < n; k += 64) {
      v.push_back(k);
      if (k + 63 < n) v.push_back(k + 63);
    }
    v.push_back(n - 1);
    return v;
  };
  expect_bit_equal([&](std::int64_t m,
                       std::int64_t o) { return host_forward_element(host_state, codes, x, m, o); },
                   y, samples(sh.M), samples(sh.out), "forward " + what);
  expect_bit_equal(
      [&](std::int64_t m, std::int64_t i) {
        return host_backward_input_element(host_state, codes, g, m, i);
      },
      gx, samples(sh.M), samples(sh.in), "backward_input " + what);
}

TEST(Linear, ForwardAndBackwardInputMatchHostLoopsBitExact) {
  for (const LinearShape sh :
       {LinearShape{1, 1, 4, 2}, LinearShape{3, 5, 12, 8}, LinearShape{7, 33, 36, 11},
        LinearShape{9, 17, 260, 8}, LinearShape{64, 40, 128, 5}, LinearShape{0, 3, 8, 8},
        LinearShape{5, 0, 8, 8}, LinearShape{130, 129, 516, 8},
        // A few samples (a GPU's small-batch forward): several 64-row teams and 64-column
        // steps, the last one partial; then whole teams and steps (word-aligned rows: runs of
        // 16 codes in both products), with 16 samples and with fewer.
        LinearShape{16, 300, 200, 8}, LinearShape{13, 129, 68, 11}, LinearShape{4, 257, 388, 3},
        LinearShape{16, 256, 320, 8}, LinearShape{5, 200, 128, 11}, LinearShape{5, 192, 128, 11},
        LinearShape{1, 64, 64, 2},
        // One to four samples over whole 64-column steps (a GPU's few-sample products: teams of
        // 32 output columns over 128-deep chunks, the last of one step where the depth is an odd
        // number of steps; samples past M read and not stored).
        LinearShape{1, 70, 192, 8}, LinearShape{2, 33, 64, 11}, LinearShape{3, 129, 128, 5},
        LinearShape{4, 100, 256, 2}, LinearShape{4, 40, 320, 3}, LinearShape{3, 48, 192, 6},
        // The same for backward_input (GPUs: whole 32-column teams over 64-deep steps of out).
        LinearShape{3, 320, 128, 5}, LinearShape{2, 256, 192, 9}, LinearShape{1, 448, 64, 4},
        LinearShape{4, 128, 320, 11},
        // forward of one or two samples on narrow layers (under 3 teams per GPU multiprocessor):
        // 256-deep chunks, whole and ending 1, 2 or 3 steps in; on wide ones (24576 columns on
        // an H200) the 128-deep chunks of the kernel above.
        LinearShape{1, 64, 320, 5}, LinearShape{2, 96, 448, 7}, LinearShape{1, 40, 512, 3},
        LinearShape{2, 64, 640, 9}, LinearShape{1, 24576, 192, 4}, LinearShape{2, 24576, 320, 10},
        // Five to sixteen samples there: 8 chains per lane, or two warps of 8 over one-step chunks,
        // or one warp of 16 once a layer has 3 teams of 32 columns per multiprocessor (on an
        // H200: forward of 24576 columns, backward_input of 13312, over four chunks each).
        LinearShape{7, 320, 448, 3}, LinearShape{12, 384, 192, 7}, LinearShape{9, 100, 256, 2},
        LinearShape{11, 24576, 256, 6}, LinearShape{14, 256, 13312, 9},
        // The one warp of 16 in forward with a partial last team (13000 columns: 407 teams).
        LinearShape{16, 13000, 192, 9},
        // Whole small GPU tiles (64 x 128) in both products.
        LinearShape{256, 256, 256, 8}}) {
    check_linear(sh, false);
  }
}

// Full-size tiles: more than 132 tiles of 128 x 128 on a GPU (one wave of an H100/H200) for both
// products, several rows of 384 x 512 host tiles (the shapes above also run the small host
// variant), partial tiles at every edge, an out that is not a multiple of 4 (the scalar staging
// path) and depths that end inside a step.
TEST(Linear, FullSizeTilesMatchHostLoopsBitExact) {
  check_linear(LinearShape{1541, 1409, 1412, 8}, true);
}

// Whole tiles only (132 of 128 x 128 for each product): on GPUs the launch without the
// edge-tested path (TileGemm's InsideTiles kernel), which the shape above never reaches.
TEST(Linear, WholeTilesMatchHostLoopsBitExact) {
  check_linear(LinearShape{4224, 512, 512, 8}, true);
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
