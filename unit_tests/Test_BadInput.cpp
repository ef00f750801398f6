// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Bad inputs: every validation error throws std::invalid_argument naming the bad value (and, for
// extents, both sizes) and leaves the state bit-for-bit unchanged; non-finite gradient rows are
// skipped, counted and left untouched while the other rows update as the reference says.
#include "Test_Helpers.hpp"

#include <functional>
#include <limits>

namespace TernaryCounter::Test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Shapes with distinctive numbers so "the message names both sizes" is a meaningful check.
constexpr std::int64_t kOut = 12, kIn = 20, kM = 9;

struct Fixture {
  HostState before;
  DeviceState state;
  DeviceMatrix grad_w, x, grad_out;
  UpdateParams params;

  Fixture() {
    SplitMix64 rng(42);
    params.C = 8;
    params.lr = 0.05;
    params.lr_scale = 2e-4;
    params.rms_beta = 0.9;
    before = random_state(kOut, kIn, params.C, rng);
    state = to_device(before);
    std::vector<float> g(kOut * kIn), xs(kM * kIn), go(kM * kOut);
    for (float& e : g) e = rng.uniform(-1, 1);
    for (float& e : xs) e = rng.uniform(-1, 1);
    for (float& e : go) e = rng.uniform(-1, 1);
    grad_w = to_device(g, kOut, kIn);
    x = to_device(xs, kM, kIn);
    grad_out = to_device(go, kM, kOut);
  }
};

std::string message_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no std::invalid_argument thrown";
  return {};
}

// The call throws std::invalid_argument mentioning every number in `numbers` (and `word`, if
// given), and the state is unchanged afterwards.
void expect_rejected(const Fixture& f, const std::function<void()>& call,
                     std::initializer_list<std::int64_t> numbers, const std::string& word = "") {
  const std::string msg = message_of(call);
  for (std::int64_t n : numbers) {
    EXPECT_TRUE(mentions_number(msg, n)) << "message does not name " << n << ": " << msg;
  }
  if (!word.empty()) EXPECT_NE(msg.find(word), std::string::npos) << msg;
  EXPECT_TRUE(same_state(f.before, to_host(f.state))) << "state changed by a rejected call";
}

TEST(BadInput, EachParamsFieldIsValidated) {
  struct Bad {
    const char* field;
    std::function<void(UpdateParams&)> set;
  };
  const std::vector<Bad> bad = {
      {"C", [](UpdateParams& p) { p.C = 1; }},
      {"C", [](UpdateParams& p) { p.C = 12; }},
      {"lr", [](UpdateParams& p) { p.lr = -0.1; }},
      {"lr", [](UpdateParams& p) { p.lr = kNaN; }},
      {"lr", [](UpdateParams& p) { p.lr = kInf; }},
      {"lr_scale", [](UpdateParams& p) { p.lr_scale = -1e-4; }},
      {"lr_scale", [](UpdateParams& p) { p.lr_scale = kNaN; }},
      {"lr_scale", [](UpdateParams& p) { p.lr_scale = kInf; }},
      {"rms_beta", [](UpdateParams& p) { p.rms_beta = -0.1; }},
      {"rms_beta", [](UpdateParams& p) { p.rms_beta = 1.5; }},
      {"rms_beta", [](UpdateParams& p) { p.rms_beta = kNaN; }},
      {"rms_eps", [](UpdateParams& p) { p.rms_eps = 0.0; }},
      {"rms_eps", [](UpdateParams& p) { p.rms_eps = -1e-3; }},
      {"rms_eps", [](UpdateParams& p) { p.rms_eps = kInf; }},
      {"rms_eps", [](UpdateParams& p) { p.rms_eps = kNaN; }},
      {"clip", [](UpdateParams& p) { p.clip = -1.0; }},
      {"clip", [](UpdateParams& p) { p.clip = kInf; }},
      {"clip", [](UpdateParams& p) { p.clip = kNaN; }},
      // Valid doubles whose float32 copy (what the kernels use) would be inf or 0.
      {"lr", [](UpdateParams& p) { p.lr = 1e39; }},
      {"lr", [](UpdateParams& p) { p.lr = 1e-50; }},
      {"lr_scale", [](UpdateParams& p) { p.lr_scale = 3.5e38; }},
      {"lr_scale", [](UpdateParams& p) { p.lr_scale = 1e-300; }},
      {"rms_eps", [](UpdateParams& p) { p.rms_eps = 1e-50; }},
      {"rms_eps", [](UpdateParams& p) { p.rms_eps = 1e300; }},
      {"clip", [](UpdateParams& p) { p.clip = 1e39; }},
      {"clip", [](UpdateParams& p) { p.clip = 1e-50; }},
      {"row_offset", [](UpdateParams& p) { p.row_offset = -3; }},
      {"team_size", [](UpdateParams& p) { p.team_size = -2; }},
      {"workspace_bytes", [](UpdateParams& p) { p.workspace_bytes = -1; }},
  };
  // Valid edge values are accepted.
  {
    UpdateParams p;
    p.lr = 0;
    p.lr_scale = 0;
    p.rms_beta = 0;
    p.clip = 0;
    EXPECT_NO_THROW(p.validate());
    p.rms_beta = 1;
    p.C = 2;
    EXPECT_NO_THROW(p.validate());
    p.C = 11;
    EXPECT_NO_THROW(p.validate());
    // The float32 extremes themselves are representable.
    p.lr = std::numeric_limits<float>::max();
    p.rms_eps = std::numeric_limits<float>::denorm_min();
    p.clip = std::numeric_limits<float>::min();
    EXPECT_NO_THROW(p.validate());
  }
  const Fixture f;
  for (const Bad& b : bad) {
    UpdateParams p = f.params;
    b.set(p);
    SCOPED_TRACE(std::string("field ") + b.field);
    const std::string msg = message_of([&] { p.validate(); });
    EXPECT_NE(msg.find(std::string(b.field) + " = "), std::string::npos) << msg;
    // A C outside [2, 11] also mismatches the state; every other field is the only problem.
    expect_rejected(
        f, [&] { update(ExecSpace{}, f.state, f.grad_w, p); }, {}, b.field);
    expect_rejected(
        f, [&] { update_from_io(ExecSpace{}, f.state, f.x, f.grad_out, p); }, {}, b.field);
  }
}

// The kernels form the global row row_offset + o in int64: an offset whose last row overflows is
// refused (found by the params fuzzer as undefined behaviour), the largest one that fits runs.
TEST(BadInput, RowOffsetWhoseLastRowOverflows) {
  const Fixture f;
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
  UpdateParams p = f.params;
  p.row_offset = max - kOut + 1;
  expect_rejected(
      f, [&] { update(ExecSpace{}, f.state, f.grad_w, p); }, {p.row_offset, kOut}, "row_offset");
  expect_rejected(
      f, [&] { update_from_io(ExecSpace{}, f.state, f.x, f.grad_out, p); }, {p.row_offset, kOut},
      "row_offset");
  p.row_offset = max - kOut;
  EXPECT_NO_THROW(update(ExecSpace{}, f.state, f.grad_w, p));
}

TEST(BadInput, TeamSizeAboveTheBackendMaximum) {
  const Fixture f;
  UpdateParams p = f.params;
  p.team_size = 1 << 20;
  expect_rejected(f, [&] { update(ExecSpace{}, f.state, f.grad_w, p); }, {p.team_size});
  expect_rejected(f, [&] { update_from_io(ExecSpace{}, f.state, f.x, f.grad_out, p); },
                  {p.team_size});
}

TEST(BadInput, UpdateGradientExtents) {
  const Fixture f;
  const DeviceMatrix rows("g", kOut + 1, kIn), cols("g", kOut, kIn + 4);
  expect_rejected(f, [&] { update(ExecSpace{}, f.state, rows, f.params); }, {kOut + 1, kOut});
  expect_rejected(f, [&] { update(ExecSpace{}, f.state, cols, f.params); }, {kIn + 4, kIn});
}

TEST(BadInput, UpdateFromIoExtents) {
  const Fixture f;
  const DeviceMatrix x_cols("x", kM, kIn + 4), go_cols("go", kM, kOut + 1),
      go_rows("go", kM + 2, kOut), ws_cols("ws", 4, kIn + 8), ws_rows("ws", 0, kIn);
  const UpdateParams& p = f.params;
  expect_rejected(f, [&] { update_from_io(ExecSpace{}, f.state, x_cols, f.grad_out, p); },
                  {kIn + 4, kIn});
  expect_rejected(f, [&] { update_from_io(ExecSpace{}, f.state, f.x, go_cols, p); },
                  {kOut + 1, kOut});
  expect_rejected(f, [&] { update_from_io(ExecSpace{}, f.state, f.x, go_rows, p); }, {kM + 2, kM});
  expect_rejected(f, [&] { update_from_io(ExecSpace{}, f.state, f.x, f.grad_out, p, ws_cols); },
                  {kIn + 8, kIn});
  expect_rejected(f, [&] { update_from_io(ExecSpace{}, f.state, f.x, f.grad_out, p, ws_rows); },
                  {0});
}

TEST(BadInput, AsynchronousCallsNeedACountView) {
  const Fixture f;
  const DeviceMatrix ws("ws", 4, kIn);
  const SkippedRowsView<MemSpace> none;
  expect_rejected(
      f, [&] { update(ExecSpace{}, f.state, f.grad_w, f.params, none); }, {}, "skipped_rows");
  expect_rejected(
      f, [&] { update_from_io(ExecSpace{}, f.state, f.x, f.grad_out, f.params, ws, none); }, {},
      "skipped_rows");
}

TEST(BadInput, CounterDepthMismatch) {
  const Fixture f;
  UpdateParams p = f.params;
  p.C = 11;  // the state has C = 8
  expect_rejected(f, [&] { update(ExecSpace{}, f.state, f.grad_w, p); }, {11, 8});
  expect_rejected(f, [&] { update_from_io(ExecSpace{}, f.state, f.x, f.grad_out, p); }, {11, 8});
}

TEST(BadInput, CodesBytesPerRowNotAMultipleOf3) {
  Fixture f;
  // A hand-made state whose codes rows have 14 bytes: in() reads as 4 * 14 / 3 = 16 (not 20), so
  // build inputs for that width too; the state check must come first.
  DeviceState bad;
  bad.C = f.params.C;
  bad.codes = DeviceState::codes_view("codes", kOut, 14);
  bad.scale = f.state.scale;
  bad.v = f.state.v;
  Kokkos::deep_copy(bad.codes, std::uint8_t(7));
  const HostState bad_before = to_host(bad);
  const DeviceMatrix g("g", kOut, bad.in()), x("x", kM, bad.in());
  const auto check = [&](const std::function<void()>& call) {
    const std::string msg = message_of(call);
    EXPECT_TRUE(mentions_number(msg, 14)) << msg;
    EXPECT_NE(msg.find("multiple of 3"), std::string::npos) << msg;
    EXPECT_TRUE(same_state(bad_before, to_host(bad)));
  };
  check([&] { update(ExecSpace{}, bad, g, f.params); });
  check([&] { update_from_io(ExecSpace{}, bad, x, f.grad_out, f.params); });
}

TEST(BadInput, ScaleOrVExtentMismatch) {
  const Fixture f;
  DeviceState bad = f.state;
  bad.scale = DeviceState::row_view("scale", kOut + 2);
  const auto msg = message_of([&] { update(ExecSpace{}, bad, f.grad_w, f.params); });
  EXPECT_TRUE(mentions_number(msg, kOut + 2) && mentions_number(msg, kOut)) << msg;
  bad = f.state;
  bad.v = DeviceState::row_view("v", kOut - 1);
  const auto msg2 =
      message_of([&] { update_from_io(ExecSpace{}, bad, f.x, f.grad_out, f.params); });
  EXPECT_TRUE(mentions_number(msg2, kOut - 1) && mentions_number(msg2, kOut)) << msg2;
  EXPECT_TRUE(same_state(f.before, to_host(f.state)));
}

// ---------------------------------------------------------------------------------------------
// Non-finite gradients

// Rows that must be skipped, and how each is made non-finite.
enum class Poison { NaN, PosInf, NegInf, Overflow };

float poison_value(Poison p) {
  switch (p) {
    case Poison::NaN:
      return std::numeric_limits<float>::quiet_NaN();
    case Poison::PosInf:
      return std::numeric_limits<float>::infinity();
    case Poison::NegInf:
      return -std::numeric_limits<float>::infinity();
    case Poison::Overflow:
      return 3e30f;  // finite, but g*g overflows: g_sq = inf
  }
  return 0;
}

void expect_skipped_rows(const Case& c, const std::vector<std::int64_t>& skipped_rows) {
  const Result got = run_case(c);
  const Result want = run_reference(c);
  EXPECT_EQ(got.skipped, std::int64_t(skipped_rows.size()));
  EXPECT_TRUE(bit_exact(got, want));
  for (std::int64_t o : skipped_rows) {
    EXPECT_EQ(bits(got.scale[o]), bits(c.scale_in[o])) << "row " << o;
    EXPECT_EQ(bits(got.v[o]), bits(c.v_in[o])) << "row " << o;
    for (std::int64_t i = 0; i < c.in; ++i) {
      ASSERT_EQ(got.codes[o * c.in + i], c.codes_in[o * c.in + i]) << "row " << o << " col " << i;
    }
  }
  // The other rows did update (so "untouched" above is not trivially true).
  std::int64_t changed = 0;
  for (std::size_t e = 0; e < c.codes_in.size(); ++e) changed += got.codes[e] != c.codes_in[e];
  EXPECT_GT(changed, 0);
}

Case base_case(const std::string& kind, std::int64_t out, std::int64_t in, std::int64_t M) {
  SplitMix64 rng(7);
  Case c;
  c.kind = kind;
  c.out = out;
  c.in = in;
  c.M = M;
  c.params.C = 8;
  c.params.lr = 0.3;
  c.params.seed = 99;
  const HostState s = random_state(out, in, c.params.C, rng);
  const auto codes = unpack_codes(s);
  c.codes_in.assign(codes.data(), codes.data() + codes.size());
  c.scale_in.assign(s.scale.data(), s.scale.data() + out);
  c.v_in.assign(s.v.data(), s.v.data() + out);
  c.grad_w.resize(out * in);
  for (float& e : c.grad_w) e = rng.uniform(-1, 1);
  c.x.resize(M * in);
  for (float& e : c.x) e = rng.uniform(-1, 1);
  c.grad_out.resize(M * out);
  for (float& e : c.grad_out) e = rng.uniform(-1, 1);
  if (kind == "dense") {
    c.x.clear();
    c.grad_out.clear();
  } else {
    c.grad_w.clear();
  }
  return c;
}

TEST(NonFinite, DenseRowsSkippedCountedAndUntouched) {
  Case c = base_case("dense", 70, 260, 0);
  const std::vector<std::pair<std::int64_t, Poison>> poisoned = {
      {0, Poison::NaN}, {5, Poison::PosInf}, {33, Poison::NegInf}, {69, Poison::Overflow}};
  std::vector<std::int64_t> rows;
  for (auto [o, kind] : poisoned) {
    c.grad_w[o * c.in + (o * 37) % c.in] = poison_value(kind);
    rows.push_back(o);
  }
  expect_skipped_rows(c, rows);
}

TEST(NonFinite, FromIoRowsSkippedCountedAndUntouched) {
  // grad_out[m, o] non-finite poisons every g[o, i] of row o (x has no zeros here, and 0*inf is
  // NaN anyway); a huge grad_out overflows only that row's g_sq.
  Case c = base_case("from_io", 70, 260, 33);
  const std::vector<std::pair<std::int64_t, Poison>> poisoned = {
      {1, Poison::NaN}, {6, Poison::PosInf}, {40, Poison::NegInf}, {68, Poison::Overflow}};
  std::vector<std::int64_t> rows;
  for (auto [o, kind] : poisoned) {
    c.grad_out[(o % c.M) * c.out + o] = poison_value(kind);
    rows.push_back(o);
  }
  expect_skipped_rows(c, rows);
}

TEST(NonFinite, FromIoNaNInputColumnSkipsEveryRow) {
  // x[m, i] feeds g[o, i] of every row o.
  Case c = base_case("from_io", 9, 20, 4);
  c.x[2 * c.in + 11] = poison_value(Poison::NaN);
  const Result got = run_case(c);
  EXPECT_EQ(got.skipped, c.out);
  const Result untouched{c.codes_in, c.scale_in, c.v_in, c.out};
  EXPECT_TRUE(bit_exact(got, untouched));
}

TEST(NonFinite, SkipsAreCountedAcrossRowSplitsAndTeamSizes) {
  Case c = base_case("dense", 20, 64, 0);
  c.grad_w[3 * c.in + 1] = poison_value(Poison::NaN);
  c.grad_w[15 * c.in + 60] = poison_value(Poison::NegInf);
  const Result want = run_reference(c);
  ASSERT_EQ(want.skipped, 2);
  for (int team_size : valid_team_sizes(c.in)) {
    for (bool asynchronous : {false, true}) {
      RunOptions opt;
      opt.team_size = team_size;
      opt.rows_per_call = 7;
      opt.asynchronous = asynchronous;
      SCOPED_TRACE(describe(opt));
      EXPECT_TRUE(bit_exact(run_case(c, opt), want));
    }
  }
}

TEST(BadInput, RowRangeOutsideTheStateThrowsAndInsideSharesMemory) {
  const DeviceState state("row_range", 5, 8, 8);
  for (const auto& [first, last] : {std::pair{-1, 2}, std::pair{3, 2}, std::pair{0, 6}}) {
    try {
      (void)state.row_range(first, last);
      ADD_FAILURE() << "row_range(" << first << ", " << last << ") did not throw";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(last)), std::string::npos) << e.what();
    }
  }
  const DeviceState part = state.row_range(1, 4);
  EXPECT_EQ(part.out(), 3);
  EXPECT_EQ(part.in(), 8);
  EXPECT_EQ(part.C, state.C);
  EXPECT_EQ(part.codes.data(), state.codes.data() + state.codes.stride(0));
  EXPECT_EQ(part.scale.data(), state.scale.data() + 1);
}

}  // namespace
}  // namespace TernaryCounter::Test
