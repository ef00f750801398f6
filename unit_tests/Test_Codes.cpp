// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// SPEC §1: code encode/decode and the 4-codes-in-3-bytes packing, for every C and every code.
#include "Test_Helpers.hpp"

#include "core/TernaryCounter_CodeUpdateTable.hpp"

namespace TernaryCounter::Test {
namespace {

// SPEC §1's byte formulas, written out independently of the library.
void spec_pack(int k0, int k1, int k2, int k3, std::uint8_t* b) {
  b[0] = std::uint8_t(k0 | (k1 & 3) << 6);
  b[1] = std::uint8_t((k1 >> 2) | (k2 & 15) << 4);
  b[2] = std::uint8_t((k2 >> 4) | k3 << 2);
}

TEST(Codes, EncodeDecodeRoundTripForEveryDepthAndCode) {
  for (int C = min_counter_depth; C <= max_counter_depth; ++C) {
    const int lv = 2 * C - 1;
    ASSERT_EQ(counter_levels(C), lv);
    ASSERT_EQ(code_count(C), 3 * lv);
    ASSERT_LE(code_count(C), 64) << "codes must fit in 6 bits";
    for (int k = 0; k < code_count(C); ++k) {
      const int t = decode_ternary(k, C), c = decode_counter(k, C);
      ASSERT_EQ(t, k / lv - 1) << "C=" << C << " k=" << k;
      ASSERT_EQ(c, k % lv - (C - 1)) << "C=" << C << " k=" << k;
      ASSERT_GE(t, -1);
      ASSERT_LE(t, 1);
      ASSERT_LE(std::abs(c), C - 1);
      ASSERT_EQ(encode(t, c, C), k) << "C=" << C;
    }
    // Every (t, c) pair has its own code, and decodes back to itself.
    for (int t = -1; t <= 1; ++t) {
      for (int c = -(C - 1); c <= C - 1; ++c) {
        const int k = encode(t, c, C);
        ASSERT_EQ(k, (t + 1) * lv + c + (C - 1)) << "C=" << C << " t=" << t << " c=" << c;
        ASSERT_GE(k, 0);
        ASSERT_LT(k, code_count(C));
        ASSERT_EQ(decode_ternary(k, C), t);
        ASSERT_EQ(decode_counter(k, C), c);
      }
    }
  }
}

TEST(Codes, GroupPackingOfEveryCodeInEveryLane) {
  for (int C = min_counter_depth; C <= max_counter_depth; ++C) {
    const int n = code_count(C);
    for (int k = 0; k < n; ++k) {
      for (int lane = 0; lane < codes_per_group; ++lane) {
        // The other lanes hold the largest code, so stray bits of k would show there.
        int q[4] = {n - 1, n - 1, n - 1, n - 1};
        q[lane] = k;
        for (int other : {0, n - 1, (k * 7 + 3) % n}) {
          for (int j = 0; j < 4; ++j) {
            if (j != lane) q[j] = other;
          }
          const std::uint32_t word = make_group(q[0], q[1], q[2], q[3]);
          ASSERT_EQ(word, std::uint32_t(q[0] | q[1] << 6 | q[2] << 12 | q[3] << 18));
          std::uint8_t bytes[3], want[3];
          store_group(word, bytes);
          spec_pack(q[0], q[1], q[2], q[3], want);
          for (int b = 0; b < 3; ++b) ASSERT_EQ(bytes[b], want[b]) << "C=" << C << " k=" << k;
          ASSERT_EQ(load_group(bytes), word);
          for (int j = 0; j < 4; ++j) ASSERT_EQ(group_code(word, j), q[j]) << "lane " << j;
        }
      }
    }
  }
}

TEST(Codes, PackStateAndUnpackCodesRoundTripForEveryDepthAndCode) {
  for (int C = min_counter_depth; C <= max_counter_depth; ++C) {
    SCOPED_TRACE("C=" + std::to_string(C));
    const int n = code_count(C);
    // n is odd, so (r + i) % n visits every code in every lane of every row.
    const std::int64_t out = n, in = 4 * n;
    Kokkos::View<std::uint8_t**, Kokkos::HostSpace> codes("codes", out, in);
    Kokkos::View<float*, Kokkos::HostSpace> scale("scale", out), v("v", out);
    for (std::int64_t r = 0; r < out; ++r) {
      for (std::int64_t i = 0; i < in; ++i) codes(r, i) = std::uint8_t((r + i) % n);
      scale(r) = 0.5f + float(r);
      v(r) = 0.25f * float(r);
    }
    const HostState state = pack_state("state", codes, scale, v, C);
    ASSERT_EQ(state.out(), out);
    ASSERT_EQ(state.in(), in);
    ASSERT_EQ(state.codes.extent(1), std::size_t(3 * in / 4));
    for (std::int64_t r = 0; r < out; ++r) {
      for (std::int64_t g = 0; g < in / 4; ++g) {
        std::uint8_t want[3];
        spec_pack(codes(r, 4 * g), codes(r, 4 * g + 1), codes(r, 4 * g + 2), codes(r, 4 * g + 3),
                  want);
        for (int b = 0; b < 3; ++b) ASSERT_EQ(state.codes(r, 3 * g + b), want[b]);
      }
      ASSERT_EQ(state.scale(r), scale(r));
      ASSERT_EQ(state.v(r), v(r));
    }
    // Through MemSpace and back: nothing changes.
    const HostState back = to_host(to_device(state));
    ASSERT_TRUE(same_state(state, back));
    const auto unpacked = unpack_codes(back);
    for (std::int64_t r = 0; r < out; ++r) {
      for (std::int64_t i = 0; i < in; ++i) ASSERT_EQ(unpacked(r, i), codes(r, i));
    }
    // A code past 3 * lv is refused.
    codes(out / 2, 5) = std::uint8_t(n);
    EXPECT_THROW(pack_state("bad", codes, scale, v, C), std::invalid_argument);
  }
}

TEST(Codes, FreshStateIsZeroTernaryZeroCounterScaleOne) {
  for (int C : {2, 8, 11}) {
    const DeviceState state("fresh", 5, 12, C);
    const HostState h = to_host(state);
    const auto codes = unpack_codes(h);
    for (std::int64_t o = 0; o < 5; ++o) {
      for (std::int64_t i = 0; i < 12; ++i) ASSERT_EQ(int(codes(o, i)), encode(0, 0, C));
      ASSERT_EQ(h.scale(o), 1.0f);
      ASSERT_EQ(h.v(o), 0.0f);
    }
  }
}

TEST(Codes, CarrySplitEqualsTruncatingDivisionOverItsRange) {
  // Step 10's counter sums lie in [-3C, 3C+1]; the kernels split them without dividing.
  for (int C = min_counter_depth; C <= max_counter_depth; ++C) {
    for (int n = -4 * C + 1; n < 4 * C; ++n) {
      ASSERT_EQ(int(RowMath::truncated_quotient(float(n), C)), n / C) << "n=" << n << " C=" << C;
    }
  }
}

TEST(Codes, CodeUpdateTableEqualsStepTenForEveryDepthCodeAndCounterSum) {
  // The GPU row update reads step 10 and the old codes' counters from this table; a team fills
  // it strided by its rank, so fill it here in 7 interleaved parts. Hosts compute step 10 in
  // floats (code_after_float).
  for (int C = min_counter_depth; C <= max_counter_depth; ++C) {
    Impl::CodeUpdateTable table{};
    for (int part = 0; part < 7; ++part) table.fill(C, part, 7);
    for (int code = 0; code < Impl::CodeUpdateTable::code_values; ++code) {
      const Impl::CodeUpdateTable::OldCode old = table.old_code[code];
      ASSERT_EQ(bits(old.counter), bits(float(decode_counter(code, C)))) << "C=" << C;
      const int t = decode_ternary(code, C);
      ASSERT_EQ(bits(table.ternary[code]), bits(float(t))) << "C=" << C << " code=" << code;
      for (int cc = -3 * C; cc <= 3 * C; ++cc) {
        ASSERT_EQ(table.next(old, cc), code_after_carry(t, cc, C))
            << "C=" << C << " code=" << code << " cc=" << cc;
        ASSERT_EQ(RowMath::code_after(t, cc, C), code_after_carry(t, cc, C));
        const float first = float(encode(t, 0, C));
        ASSERT_EQ(int(RowMath::code_after_float(first, float(cc), C)), code_after_carry(t, cc, C))
            << "C=" << C << " t=" << t << " cc=" << cc;
      }
    }
  }
}

}  // namespace
}  // namespace TernaryCounter::Test
