// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The kernels against TernaryCounter::Reference (plain host loops of SPEC §3) on random inputs of
// awkward shapes: out not a multiple of any tile, in with partial 256-column blocks and partial
// tiles, M = 0 and M not a multiple of the staging depth. Bit-exact.
#include "Test_Helpers.hpp"

namespace TernaryCounter::Test {
namespace {

constexpr std::int64_t kOuts[] = {1, 37, 130};
constexpr std::int64_t kIns[] = {4, 100, 260, 1028};
constexpr std::int64_t kMs[] = {0, 1, 3, 129};

// Varies C, lagged, clip and the seed over the shapes so each shape also meets a new setting.
UpdateParams params_for(int variant) {
  UpdateParams p;
  const int Cs[] = {2, 5, 8, 11};
  p.C = Cs[variant % 4];
  p.lr = 0.05 + 0.1 * (variant % 3);
  p.lr_scale = variant % 2 ? 2e-4 : 5e-2;
  p.rms_beta = variant % 5 == 0 ? 0.0 : 0.9;
  p.lagged = variant % 3 == 1;
  p.clip = variant % 4 == 2 ? 0.5 : 0.0;
  p.seed = 0x9e3779b9u * std::uint32_t(variant + 1);
  return p;
}

std::vector<float> random_matrix(std::int64_t rows, std::int64_t cols, float amplitude,
                                 SplitMix64& rng) {
  std::vector<float> a(rows * cols);
  for (float& e : a) e = rng.uniform(-amplitude, amplitude);
  return a;
}

std::int64_t changed_codes(const Result& r, const std::vector<std::uint8_t>& before) {
  std::int64_t n = 0;
  for (std::size_t e = 0; e < before.size(); ++e) n += r.codes[e] != before[e];
  return n;
}

// A Case built from random inputs, so run_case / run_reference can be used as for files.
Case random_case(const std::string& kind, std::int64_t out, std::int64_t in, std::int64_t M,
                 int variant) {
  SplitMix64 rng(std::uint64_t(variant) * 1000003u + std::uint64_t(out * 7 + in * 13 + M));
  Case c;
  c.kind = kind;
  c.out = out;
  c.in = in;
  c.M = M;
  c.params = params_for(variant);
  const HostState s = random_state(out, in, c.params.C, rng);
  const auto codes = unpack_codes(s);
  c.codes_in.assign(codes.data(), codes.data() + codes.size());
  c.scale_in.assign(s.scale.data(), s.scale.data() + out);
  c.v_in.assign(s.v.data(), s.v.data() + out);
  if (kind == "dense") {
    c.grad_w = random_matrix(out, in, 0.5f, rng);
  } else {
    c.x = random_matrix(M, in, 1.0f, rng);
    c.grad_out = random_matrix(M, out, 0.3f, rng);
  }
  return c;
}

TEST(Reference, DenseUpdateBitExactOnAwkwardShapes) {
  int variant = 0;
  std::int64_t changed = 0;
  for (std::int64_t out : kOuts) {
    for (std::int64_t in : kIns) {
      const Case c = random_case("dense", out, in, 0, variant++);
      SCOPED_TRACE("dense out=" + std::to_string(out) + " in=" + std::to_string(in) +
                   " C=" + std::to_string(c.params.C));
      const Result want = run_reference(c);
      changed += changed_codes(want, c.codes_in);
      EXPECT_TRUE(bit_exact(run_case(c), want));
    }
  }
  EXPECT_GT(changed, 1000) << "the inputs should move many codes, or the test proves little";
}

TEST(Reference, UpdateFromIoBitExactOnAwkwardShapes) {
  int variant = 0;
  std::int64_t changed = 0;
  for (std::int64_t out : kOuts) {
    for (std::int64_t in : kIns) {
      for (std::int64_t M : kMs) {
        const Case c = random_case("from_io", out, in, M, variant++);
        SCOPED_TRACE("from_io out=" + std::to_string(out) + " in=" + std::to_string(in) +
                     " M=" + std::to_string(M) + " C=" + std::to_string(c.params.C));
        const Result want = run_reference(c);
        changed += changed_codes(want, c.codes_in);
        EXPECT_TRUE(bit_exact(run_case(c), want));
      }
    }
  }
  EXPECT_GT(changed, 1000) << "the inputs should move many codes, or the test proves little";
}

TEST(Reference, UpdateFromIoWithSmallWorkspaceAndRowOffset) {
  // Chunked gradient rows plus a sharded call (row_offset > 0) on an awkward shape.
  const Case c = random_case("from_io", 37, 260, 33, 7);
  const Result want = run_reference(c);
  for (std::int64_t ws : {std::int64_t(1), std::int64_t(3), std::int64_t(16)}) {
    RunOptions opt;
    opt.workspace_rows = ws;
    opt.rows_per_call = 20;
    SCOPED_TRACE(describe(opt));
    EXPECT_TRUE(bit_exact(run_case(c, opt), want));
  }
}

// Gradients and denominators at the edges of float: rows whose groups mix zeros, subnormals and
// values beyond 2^60 with ordinary ones, a row of tiny denominator and one of huge denominator.
// (Any shortcut of step 9's division, e.g. a multiplication by the row's reciprocal on GPUs,
// must keep these bits.)
TEST(Reference, GradientsAndDenominatorsAtTheEdgesOfFloat) {
  Case c = random_case("dense", 5, 1028, 0, 1);  // lagged: the denominators are sqrt(v_in)
  c.params.rms_eps = 1e-30;
  const float specials[] = {0.0f, -0.0f, 1e-40f, -0x1p-61f, 0x1p-60f, 0x1p60f, -0x1p61f, 3e-39f};
  // Every 7th column of row 0 (its sum of squares, about 1.2e38, stays finite).
  for (std::int64_t i = 0; i < c.in; i += 7) c.grad_w[i] = specials[(i / 7) % 8];
  for (std::int64_t i = 0; i < c.in; ++i) c.grad_w[c.in + i] = 1e-25f * (i % 3 ? 1.0f : -1.0f);
  c.v_in[1] = 1e-40f;  // denominator 1e-20
  c.v_in[2] = 1e37f;   // denominator 3e18
  const Result want = run_reference(c);
  EXPECT_EQ(want.skipped, 0);
  EXPECT_TRUE(bit_exact(run_case(c), want));
}

TEST(Reference, ZeroRowLayerIsANoOp) {
  const Case dense = random_case("dense", 0, 100, 0, 1);
  const Case io = random_case("from_io", 0, 100, 3, 2);
  EXPECT_EQ(run_case(dense).skipped, 0);
  EXPECT_EQ(run_case(io).skipped, 0);
}

}  // namespace
}  // namespace TernaryCounter::Test
