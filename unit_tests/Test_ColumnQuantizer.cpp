// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// engines/TernaryCounter_ColumnQuantizer.hpp (hosts' update_from_io operands) against the
// host-loop reference, bit for bit: x by columns (nearest) into xq [M, in], grad_out by columns
// (stochastic, stream tag_w) transposed into gq [out, Mp] with its row sums, whole and partial
// blocks of columns, zero and non-finite columns, in the AVX-512 and scalar copies.
#include "Test_Helpers.hpp"

#include "IntegerReference.hpp"
#include "engines/TernaryCounter_ColumnQuantizer.hpp"
#include "engines/TernaryCounter_HostIsa.hpp"
#include "engines/TernaryCounter_Quantize.hpp"
#include "engines/TernaryCounter_QuantizedRows.hpp"
#include "engines/TernaryCounter_ScratchArena.hpp"

#include <limits>
#include <string>
#include <vector>

namespace TernaryCounter::Test {
namespace ColumnQuantizerTest {

/// The test on a host space (the quantizer exists for hosts only; GPUs: TiledColumnQuantizer).
template <class Space>
void quantizes_as_the_reference() {
  using namespace Reference::Int8;
  using Mem = typename Space::memory_space;
  // 130 columns of x: one whole block of 128 and two single columns; 300 of grad_out.
  const std::int64_t M = 37, in = 130, out = 300, row_offset = 4;
  const std::uint32_t seed = 99;
  SplitMix64 rng(31);
  std::vector<float> x(M * in), g(M * out);
  for (float& v : x) v = rng.uniform(-3.0f, 3.0f);
  for (float& v : g) v = rng.uniform(-0.01f, 0.01f);
  for (std::int64_t m = 0; m < M; ++m) {
    x[m * in + 3] = 0.0f;  // a zero column: q = 0, scale 0
    g[m * out + 200] = 0.0f;
  }
  x[5 * in + 129] = std::numeric_limits<float>::infinity();  // non-finite: q = 0, scale NaN
  g[9 * out + 7] = std::numeric_limits<float>::quiet_NaN();
  const Space space;
  const std::int64_t Mp = Impl::padded_depth(M);
  Impl::ScratchArena<Space> arena(space, Impl::QuantizedRows<Mem>::bytes(out, M));
  const Impl::QuantizedRows<Mem> gq(space, arena, out, M);
  const Impl::Int8Matrix<Mem> xq("xq", M, in);
  const Kokkos::View<float*, Mem> x_scale("x_scale", in);
  const Kokkos::View<const float**, Kokkos::LayoutRight, Mem> xd(x.data(), M, in);
  const Kokkos::View<const float**, Kokkos::LayoutRight, Mem> gd(g.data(), M, out);
  Impl::ColumnQuantizer<Space>{
      xd, gd, xq, x_scale, gq, Impl::stream_key(seed, Impl::int8_weight_gradient_tag), row_offset}
      .run(space, "TernaryCounter::test::column_quantizer");
  space.fence();
  for (std::int64_t i = 0; i < in; ++i) {
    const float a = absmax(M, [&](std::int64_t m) { return x[m * in + i]; });
    ASSERT_EQ(bits(x_scale(i)), bits(scale_of(a))) << "x column " << i;
    for (std::int64_t m = 0; m < M; ++m) {
      ASSERT_EQ(int(xq(m, i)), nearest(x[m * in + i], a)) << "x column " << i << " sample " << m;
    }
  }
  for (std::int64_t o = 0; o < out; ++o) {
    const float a = absmax(M, [&](std::int64_t m) { return g[m * out + o]; });
    ASSERT_EQ(bits(gq.scale(o)), bits(scale_of(a))) << "grad_out column " << o;
    std::int32_t sum = 0;
    for (std::int64_t m = 0; m < Mp; ++m) {
      const std::uint64_t elem = std::uint64_t(row_offset + o) * M + m;
      const int want = m < M ? stochastic(g[m * out + o], a, stream_u(seed, tag_w, elem)) : 0;
      ASSERT_EQ(int(gq.q(o, m)), want) << "grad_out column " << o << " sample " << m;
      sum += want;
    }
    EXPECT_EQ(gq.sums(o), sum) << "grad_out column " << o;
  }
}

/// The test in each host copy (AVX-512 where the CPU has it, scalar); skipped on GPUs, which run
/// TiledColumnQuantizer (Test_GpuIntegerKernels).
template <class Space>
void in_each_host_copy() {
  if constexpr (!std::is_same_v<typename Space::memory_space, Kokkos::HostSpace>) {
    GTEST_SKIP() << "hosts only";
  } else {
    const char* previous = std::getenv("TERNARYCOUNTER_HOST_ISA");
    const std::string saved = previous ? previous : "";
    for (const char* isa : {"default", "baseline"}) {
      if (std::string(isa) != "default") Impl::force_host_isa(isa);
      SCOPED_TRACE(std::string("host ISA ") + isa);
      quantizes_as_the_reference<Space>();
    }
    Impl::force_host_isa(previous ? saved.c_str() : nullptr);
  }
}

TEST(ColumnQuantizer, QuantizesAsTheReference) {
  in_each_host_copy<ExecSpace>();
}

}  // namespace ColumnQuantizerTest
}  // namespace TernaryCounter::Test
