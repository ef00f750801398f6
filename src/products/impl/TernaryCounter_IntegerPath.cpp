// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "products/impl/TernaryCounter_IntegerPath.hpp"

#include "TernaryCounter_Params.hpp"
#include "core/impl/TernaryCounter_ExecutionSpaces.hpp"
#include "core/impl/TernaryCounter_ScratchArena.hpp"
#include "products/impl/TernaryCounter_DecodedBlocks.hpp"
#include "products/impl/TernaryCounter_FewSampleInt8BackwardInput.hpp"
#include "products/impl/TernaryCounter_FewSampleInt8Forward.hpp"
#include "products/impl/TernaryCounter_HostInt8Gemm.hpp"
#include "products/impl/TernaryCounter_IntegerOperands.hpp"
#include "quantize/impl/TernaryCounter_Quantize.hpp"
#include "quantize/impl/TernaryCounter_TiledColumnQuantizer.hpp"
#include "quantize/impl/TernaryCounter_VectorRowQuantizer.hpp"
#include "update/impl/TernaryCounter_IntegerGradientRows.hpp"
#include "update/impl/TernaryCounter_RowUpdateKernel.hpp"
#include "vendor/TernaryCounter_CublasInt8.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace TernaryCounter::Impl {

void require_int8_bound(const char* call, const char* what, std::int64_t value,
                        std::int64_t bound) {
  if (value <= bound) return;
  std::ostringstream msg;
  msg << "TernaryCounter::" << call << ": " << what << " = " << value << " exceeds " << bound
      << ", the integer path's bound (its int32 sums would overflow; SPEC §6)";
  throw std::invalid_argument(msg.str());
}

namespace {

template <class MemorySpace>
using FloatVector = Kokkos::View<float*, MemorySpace>;
template <class MemorySpace>
using IntVector = Kokkos::View<std::int32_t*, MemorySpace>;

/// A matrix quantized by rows: q [R + int8_padding_rows, Kp] (zero padding), the rows' scales and
/// integer sums, in a call's scratch.
template <class MemorySpace>
struct QuantizedRows {
  Int8Matrix<MemorySpace> q;
  FloatVector<MemorySpace> scale;
  IntVector<MemorySpace> sums;

  QuantizedRows() = default;
  static std::size_t bytes(std::int64_t rows, std::int64_t depth) {
    return scratch_bytes<std::int8_t>((rows + int8_padding_rows) * padded_depth(depth)) +
           scratch_bytes<float>(rows) + scratch_bytes<std::int32_t>(rows);
  }
  template <class ExecSpace>
  QuantizedRows(const ExecSpace& space, ScratchArena<ExecSpace>& arena, std::int64_t rows,
                std::int64_t depth)
      : q(arena.template take<std::int8_t>((rows + int8_padding_rows) * padded_depth(depth)),
          rows + int8_padding_rows, padded_depth(depth)),
        scale(arena.template take<float>(rows), rows),
        sums(arena.template take<std::int32_t>(rows), rows) {
    Kokkos::deep_copy(
        space, Kokkos::subview(q, std::make_pair(rows, rows + int8_padding_rows), Kokkos::ALL),
        std::int8_t(0));
  }
};

/// The scratch of a block of decoded weights: `rows` rows (at most) of `depth` int8.
inline std::size_t decoded_block_scratch(std::int64_t rows, std::int64_t depth) {
  return scratch_bytes<std::int8_t>(decoded_block_rows(rows, depth) * depth);
}

/// Quantizes each row r of src [R, K] (times column_scale[k] when Scaled) to q(r, :): nearest,
/// or stochastic on the stream `key` with elem = (first_row + r) * K + k (SPEC §6, forward /
/// backward_input; first_row: the global index of row 0).
/// GPUs: a team per row, the absmax a team reduction (a max: any order). Hosts: a thread per row
/// in loops that vectorize.
template <class ExecSpace, bool Scaled, bool Stochastic>
struct RowQuantizer {
  using Mem = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  static constexpr bool host = std::is_same_v<Mem, Kokkos::HostSpace>;
  InputView<Mem> src;
  Kokkos::View<const float*, Mem> column_scale;
  QuantizedRows<Mem> dst;
  std::uint32_t key = 0;
  std::int64_t first_row = 0;
  bool avx512 = false;  ///< hosts: the AVX-512 copy of the nearest rounding (set by run)

  KOKKOS_INLINE_FUNCTION float value(std::int64_t r, std::int64_t k) const {
    if constexpr (Scaled) {
      return src(r, k) * column_scale(k);
    } else {
      return src(r, k);
    }
  }
  KOKKOS_INLINE_FUNCTION int quantize(const QuantizeRule& rule, std::uint32_t row_elem,
                                      std::int64_t r, std::int64_t k) const {
    if constexpr (Stochastic) {
      return rule.stochastic(value(r, k), uniform01(key, row_elem + std::uint32_t(k)));
    } else {
      return rule.nearest(value(r, k));
    }
  }

  /// Hosts: row r by one thread.
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t r) const {
    const std::int64_t depth = src.extent(1), padded = dst.q.extent(1);
    std::uint32_t amax_bits = 0;
    for (std::int64_t k = 0; k < depth; ++k) {
      const std::uint32_t b = absmax_term_bits(value(r, k));
      amax_bits = b > amax_bits ? b : amax_bits;
    }
    const float amax = absmax_from_bits(amax_bits);
    const QuantizeRule rule(amax);
    const std::uint32_t row_elem = element_index(first_row + r, depth, 0);
    std::int32_t sum = 0;
    bool vectorized = false;
#if TERNARYCOUNTER_HOST_VNNI
    if constexpr (host && !Scaled && !Stochastic) {
      if (avx512 && !rule.zero) {
        sum = HostInt8::quantize_nearest_row(&src(r, 0), depth, amax, &dst.q(r, 0));
        vectorized = true;
      }
    }
#endif
    for (std::int64_t k = 0; k < depth && !vectorized; ++k) {
      const int q = quantize(rule, row_elem, r, k);
      dst.q(r, k) = std::int8_t(q);
      sum += q;
    }
    for (std::int64_t k = depth; k < padded; ++k) dst.q(r, k) = 0;
    dst.scale(r) = dequantization_scale(amax);
    dst.sums(r) = sum;
  }

  /// GPUs: row league_rank() by a team.
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const std::int64_t r = team.league_rank();
    const std::int64_t depth = src.extent(1), padded = dst.q.extent(1);
    float amax = 0.0f;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, depth),
        [&](std::int64_t k, float& m) { m = absmax_join(m, absmax_term(value(r, k))); },
        Kokkos::Max<float>(amax));
    amax = absmax_join(0.0f, amax);  // a row of no columns
    const QuantizeRule rule(amax);
    const std::uint32_t row_elem = element_index(first_row + r, depth, 0);
    std::int32_t sum = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, padded),
        [&](std::int64_t k, std::int32_t& acc) {
          const int q = k < depth ? quantize(rule, row_elem, r, k) : 0;
          dst.q(r, k) = std::int8_t(q);
          acc += q;
        },
        sum);
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      dst.scale(r) = dequantization_scale(amax);
      dst.sums(r) = sum;
    });
  }

  void run(const ExecSpace& space, const char* label) const {
    if constexpr (host) {
      RowQuantizer rows = *this;
      rows.avx512 = HostInt8::runs_avx512();  // once per launch: it reads the environment
      Kokkos::parallel_for(label,
                           Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
                               space, 0, std::int64_t(src.extent(0))),
                           rows);
    } else {
#ifdef KOKKOS_ENABLE_CUDA
      if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda>) {  // rows of whole float4s
        using Vector = VectorRowQuantizer<ExecSpace, Scaled, Stochastic>;
        if (Vector::runs(src, column_scale)) {
          Vector{src, column_scale, dst.q, dst.scale, dst.sums, key, first_row}.run(space, label);
          return;
        }
      }
#endif
      Kokkos::parallel_for(label, Kokkos::TeamPolicy<ExecSpace>(space, src.extent(0), Kokkos::AUTO),
                           *this);
    }
  }
};

/// What a ColumnQuantizer launch does: the columns' absmax and the quantization (one process),
/// only the absmax, or only the quantization with given absmax (data parallelism, SPEC §7).
enum class ColumnPass { both, absmax, quantize };

/// The weight gradient's operands on hosts (SPEC §6, update from IO; GPUs: TiledColumnQuantizer):
/// x quantized per column to xq [M, in] (nearest) and grad_out per column, transposed, to
/// gq [out, Mp] (stochastic on stream tag_w with elem = (row_offset + o) * M + m), with the
/// columns' scales and gq's row sums.
/// A thread takes `width` adjacent columns of one matrix and reads the samples' rows contiguously
/// (in loops that vectorize); gq's transposed rows are written through a small tile of `tile`
/// samples.
template <class ExecSpace>
struct ColumnQuantizer {
  using Mem = typename ExecSpace::memory_space;
  static_assert(std::is_same_v<Mem, Kokkos::HostSpace>);
  static constexpr int width = 128;
  static constexpr int tile = 64;
  InputView<Mem> x, grad_out;
  Int8Matrix<Mem> xq;
  FloatVector<Mem> x_scale;
  QuantizedRows<Mem> gq;
  std::uint32_t key = 0;
  std::int64_t row_offset = 0;
  bool avx512 = false;  ///< hosts: the AVX-512 copy of x's nearest rounding (set by run)
  /// Data parallelism (SPEC §7): the global batch size and this block's first global sample,
  /// which key gq's stream (-1: these samples are the whole batch).
  std::int64_t stream_samples = -1;
  std::int64_t sample_offset = 0;
  /// The columns' absmax bits [in + out] (x's, then grad_out's): written by an absmax pass, read
  /// by a quantize pass (both: the quantizer's own, and this is unused).
  Kokkos::View<std::uint32_t*, Mem> amax_bits;
  ColumnPass pass = ColumnPass::both;

  KOKKOS_INLINE_FUNCTION static std::int64_t blocks(std::int64_t n) {
    return (n + width - 1) / width;
  }

  /// xq(m, c0 + j) for every sample, rows of W levels.
  template <int W>
  KOKKOS_INLINE_FUNCTION void quantize_x_rows(std::int64_t c0, const float* amax) const {
    const std::int64_t M = x.extent(0);
#if TERNARYCOUNTER_HOST_VNNI
    if constexpr (W % 16 == 0) {
      if (avx512) {
        for (std::int64_t m = 0; m < M; ++m) {
          HostInt8::quantize_nearest_columns(&x(m, c0), W, amax, &xq(m, c0));
        }
        return;
      }
    }
#endif
    for (std::int64_t m = 0; m < M; ++m) {
      const float* row = &x(m, c0);
      std::int8_t* q = &xq(m, c0);
      for (int j = 0; j < W; ++j) q[j] = std::int8_t(QuantizeRule(amax[j]).nearest(row[j]));
    }
  }

  /// Columns [c0, c0 + W) of x.
  /// amax[j]: the absmax of column c0 + j of `m` (first: its index in amax_bits), from
  /// amax_bits in a quantize pass, else over the samples (and stored in an absmax pass).
  template <int W>
  KOKKOS_INLINE_FUNCTION void column_absmax(const InputView<Mem>& m, std::int64_t c0,
                                            std::int64_t first, float* amax) const {
    if (pass == ColumnPass::quantize) {
      for (int j = 0; j < W; ++j) amax[j] = absmax_from_bits(amax_bits(first + c0 + j));
      return;
    }
    for (int j = 0; j < W; ++j) amax[j] = 0.0f;
    for (std::int64_t s = 0; s < std::int64_t(m.extent(0)); ++s) {
      const float* row = &m(s, c0);
      for (int j = 0; j < W; ++j) amax[j] = absmax_join(amax[j], absmax_term(row[j]));
    }
    if (pass == ColumnPass::absmax) {
      for (int j = 0; j < W; ++j)
        amax_bits(first + c0 + j) = Kokkos::bit_cast<std::uint32_t>(amax[j]);
    }
  }

  template <int W>
  KOKKOS_INLINE_FUNCTION void quantize_x(std::int64_t c0) const {
    float amax[W];
    column_absmax<W>(x, c0, 0, amax);
    if (pass == ColumnPass::absmax) return;
    quantize_x_rows<W>(c0, amax);
    for (int j = 0; j < W; ++j) x_scale(c0 + j) = dequantization_scale(amax[j]);
  }

  /// Columns [o0, o0 + W) of grad_out.
  template <int W>
  KOKKOS_INLINE_FUNCTION void quantize_grad_out(std::int64_t o0) const {
    const std::int64_t M = grad_out.extent(0), padded = gq.q.extent(1);
    float amax[W];
    column_absmax<W>(grad_out, o0, x.extent(1), amax);
    if (pass == ColumnPass::absmax) return;
    const std::int64_t stream_M = stream_samples < 0 ? M : stream_samples;
    std::int32_t sum[W];
    std::uint32_t column_elem[W];
    for (int j = 0; j < W; ++j) {
      sum[j] = 0;
      column_elem[j] = element_index(row_offset + o0 + j, stream_M, sample_offset);
    }
    for (std::int64_t m0 = 0; m0 < padded; m0 += tile) {
      std::int8_t q[tile][W];
      const int n = int(Kokkos::min<std::int64_t>(tile, padded - m0));
      for (int e = 0; e < n; ++e) {
        const std::int64_t m = m0 + e;
        if (m < M) {
          const float* row = &grad_out(m, o0);
          for (int j = 0; j < W; ++j) {
            const int v = QuantizeRule(amax[j]).stochastic(
                row[j], uniform01(key, column_elem[j] + std::uint32_t(m)));
            q[e][j] = std::int8_t(v);
            sum[j] += v;
          }
        } else {
          for (int j = 0; j < W; ++j) q[e][j] = 0;
        }
      }
      for (int j = 0; j < W; ++j) {
        std::int8_t* out = &gq.q(o0 + j, m0);
        for (int e = 0; e < n; ++e) out[e] = q[e][j];
      }
    }
    for (int j = 0; j < W; ++j) {
      gq.scale(o0 + j) = dequantization_scale(amax[j]);
      gq.sums(o0 + j) = sum[j];
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t b) const {
    const std::int64_t in = x.extent(1), out = grad_out.extent(1);
    const bool of_x = b < blocks(in);
    const std::int64_t c0 = (of_x ? b : b - blocks(in)) * width;
    const std::int64_t n = of_x ? in : out;
    if (c0 + width <= n) {
      if (of_x) {
        quantize_x<width>(c0);
      } else {
        quantize_grad_out<width>(c0);
      }
      return;
    }
    for (std::int64_t c = c0; c < n; ++c) {
      if (of_x) {
        quantize_x<1>(c);
      } else {
        quantize_grad_out<1>(c);
      }
    }
  }

  void run(const ExecSpace& space, const char* label) const {
    ColumnQuantizer columns = *this;
    columns.avx512 = HostInt8::runs_avx512();  // once per launch: it reads the environment
    Kokkos::parallel_for(label,
                         Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
                             space, 0, blocks(x.extent(1)) + blocks(grad_out.extent(1))),
                         columns);
  }
};

/// v, or the quiet NaN 0x7FC00000 where v is a NaN: an output's NaN has the same bits on every
/// backend (GPUs' arithmetic gives other NaN bits than CPUs'; SPEC §6).
KOKKOS_INLINE_FUNCTION float canonical_nan(float v) {
  return v != v ? Kokkos::Experimental::quiet_NaN_v<float> : v;
}

/// y(m, o) = (float(Y) * s_m) * scale[o].
template <class Mem>
struct ForwardEpilogue {
  OutputView<Mem> y;
  FloatVector<Mem> sample_scale;
  Kokkos::View<const float*, Mem> row_scale;
  KOKKOS_INLINE_FUNCTION void store(std::int64_t m, std::int64_t o, std::int32_t sum) const {
    y(m, o) = canonical_nan((float(sum) * sample_scale(m)) * row_scale(o));
  }
  void store_run(std::int64_t m, std::int64_t o0, int n, const std::int32_t* sums) const {
    const float s = sample_scale(m);
    float* out = &y(m, o0);
    const float* scale = &row_scale(o0);
    for (int j = 0; j < n; ++j) out[j] = canonical_nan((float(sums[j]) * s) * scale[j]);
  }
};

/// grad_x(m, i) = float(X) * r_m.
template <class Mem>
struct BackwardInputEpilogue {
  OutputView<Mem> grad_x;
  FloatVector<Mem> sample_scale;
  KOKKOS_INLINE_FUNCTION void store(std::int64_t m, std::int64_t i, std::int32_t sum) const {
    grad_x(m, i) = canonical_nan(float(sum) * sample_scale(m));
  }
  void store_run(std::int64_t m, std::int64_t i0, int n, const std::int32_t* sums) const {
    const float r = sample_scale(m);
    float* out = &grad_x(m, i0);
    for (int j = 0; j < n; ++j) out[j] = canonical_nan(float(sums[j]) * r);
  }
};

/// g(r, i) = float(G) * (sg[first + r] * sx[i]), into the update's gradient rows.
template <class Mem>
struct GradientEpilogue {
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> gradient;
  FloatVector<Mem> row_scale;  ///< sg of the chunk's rows
  FloatVector<Mem> col_scale;  ///< sx
  KOKKOS_INLINE_FUNCTION void store(std::int64_t r, std::int64_t i, std::int32_t sum) const {
    gradient(r, i) = float(sum) * (row_scale(r) * col_scale(i));
  }
  void store_run(std::int64_t r, std::int64_t i0, int n, const std::int32_t* sums) const {
    const float sg = row_scale(r);
    float* out = &gradient(r, i0);
    const float* sx = &col_scale(i0);
    for (int j = 0; j < n; ++j) out[j] = float(sums[j]) * (sg * sx[j]);
  }
};

/// sums(r, i) = G: the weight gradient's int32 sums themselves (data parallelism, SPEC §7).
template <class Mem>
struct IntegerSumsEpilogue {
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Mem> sums;
  KOKKOS_INLINE_FUNCTION void store(std::int64_t r, std::int64_t i, std::int32_t sum) const {
    sums(r, i) = sum;
  }
  void store_run(std::int64_t r, std::int64_t i0, int n, const std::int32_t* run) const {
    std::int32_t* out = &sums(r, i0);
    for (int j = 0; j < n; ++j) out[j] = run[j];
  }
};

template <class ExecSpace>
constexpr bool host_space = std::is_same_v<typename ExecSpace::memory_space, Kokkos::HostSpace>;

/// Whether the products of ExecSpace run on a vendor's int8 GEMM (cublas_int8_gemm).
template <class ExecSpace>
#ifdef KOKKOS_ENABLE_CUDA
constexpr bool vendor_gemm_space = std::is_same_v<ExecSpace, Kokkos::Cuda>;
#else
constexpr bool vendor_gemm_space = false;
#endif

/// The vendor's int8 GEMM c = a b^T into an output's memory (see cublas_int8_gemm): none here.
template <class ExecSpace>
bool vendor_int8_gemm(const ExecSpace&, std::int64_t, std::int64_t, std::int64_t,
                      const std::int8_t*, std::int64_t, const std::int8_t*, std::int64_t, float*,
                      std::int64_t) {
  return false;
}
#ifdef KOKKOS_ENABLE_CUDA
inline bool vendor_int8_gemm(const Kokkos::Cuda& space, std::int64_t rows, std::int64_t cols,
                             std::int64_t depth, const std::int8_t* a, std::int64_t lda,
                             const std::int8_t* b, std::int64_t ldb, float* c, std::int64_t ldc) {
  return cublas_int8_gemm(space, rows, cols, depth, a, lda, b, ldb,
                          reinterpret_cast<std::int32_t*>(c), ldc);
}
#endif

/// out [M, cols] = a W' on the vendor GEMM, W' decoded one block at a time by Decode (forward:
/// rows of W, backward_input: columns of W), then the epilogue in place; false where the GEMM
/// cannot run.
template <template <class> class Decode, class ExecSpace, class Epilogue>
bool vendor_product(const ExecSpace& space, ScratchArena<ExecSpace>& arena,
                    const PackedState<typename ExecSpace::memory_space>& state,
                    const QuantizedRows<typename ExecSpace::memory_space>& a,
                    const OutputView<typename ExecSpace::memory_space>& out,
                    const Epilogue& epilogue, const char* label) {
  const std::int64_t M = out.extent(0), cols = out.extent(1), depth = a.q.extent(1);
  const std::int64_t block = decoded_block_rows(cols, depth);
  const Int8Matrix<typename ExecSpace::memory_space> w(
      arena.template take<std::int8_t>(block * depth), block, depth);
  for (std::int64_t c0 = 0; c0 < cols; c0 += block) {
    const std::int64_t n = std::min(block, cols - c0);
    Decode<ExecSpace>{state.codes, state.C, w, c0, n}.run(space);
    if (!vendor_int8_gemm(space, M, n, depth, a.q.data(), depth, w.data(), depth, out.data() + c0,
                          out.stride(0))) {
      return false;
    }
  }
  finish_in_place(space, out, M, cols, epilogue, label);
  return true;
}

/// C = A B by the hosts' VNNI engine where it runs, else by the portable engine.
template <class ExecSpace, class B, class Epilogue>
void run_integer_product(const ExecSpace& space,
                         const QuantizedRows<typename ExecSpace::memory_space>& a, const B& b,
                         int C, std::int64_t rows, std::int64_t cols, const Epilogue& epilogue,
                         const char* label) {
  using Mem = typename ExecSpace::memory_space;
  const Int8Rows<Mem> rows_a{a.q};
  if constexpr (host_space<ExecSpace>) {
    const HostInt8::Engine engine = HostInt8::engine();
    if (engine != HostInt8::Engine::portable) {
      space.fence(label);  // the quantizers' results are read by host threads below
      const char* suffix = engine == HostInt8::Engine::amx ? "::amx" : "::vnni";
      HostInt8::gemm(engine, space, rows_a, a.sums.data(), b, C, rows, cols, epilogue,
                     (std::string(label) + suffix).c_str());
      return;
    }
  }
  PortableIntegerProduct<ExecSpace, B, Epilogue>{rows_a, b,    epilogue,
                                                 rows,   cols, std::int64_t(a.q.extent(1)) / 4}
      .run(space, label);
}

}  // namespace

template <class ExecSpace>
void forward_int8(const ExecSpace& space,
                  const PackedState<typename ExecSpace::memory_space>& state,
                  const InputView<typename ExecSpace::memory_space>& x,
                  const OutputView<typename ExecSpace::memory_space>& y) {
  using Mem = typename ExecSpace::memory_space;
  require_int8_bound("forward", "in", state.in(), int8_max_depth);
  const std::int64_t M = x.extent(0);
  std::size_t bytes = QuantizedRows<Mem>::bytes(M, state.in());
  if constexpr (vendor_gemm_space<ExecSpace>) {
    bytes += decoded_block_scratch(state.out(), padded_depth(state.in()));
  }
  ScratchArena<ExecSpace> arena(space, bytes);
  const QuantizedRows<Mem> xq(space, arena, M, state.in());
  RowQuantizer<ExecSpace, false, false>{x, {}, xq, 0}.run(space,
                                                          "TernaryCounter::forward::quantize_x");
  const TernaryByColumn<Mem> weights{state.codes, state.C};
  const ForwardEpilogue<Mem> epilogue{y, xq.scale, state.scale};
  if constexpr (host_space<ExecSpace>) {
    // A few samples: each weight is used M times, so decoding in registers beats packing panels.
    if (M <= HostInt8::few_samples && HostInt8::engine() != HostInt8::Engine::portable &&
        HostInt8::runs_vbmi()) {
      space.fence("TernaryCounter::forward::few_samples");
      HostInt8::few_sample_forward(space, Int8Rows<Mem>{xq.q}, xq.sums.data(), weights, M, epilogue,
                                   "TernaryCounter::forward::int8_few_samples");
      return;
    }
  }
  if constexpr (!host_space<ExecSpace>) {  // hosts have their own (VBMI, above)
    if (few_sample_int8_forward(space, xq.q, xq.sums, state, M, epilogue)) return;
  }
  if constexpr (vendor_gemm_space<ExecSpace>) {
    if (vendor_product<DecodeWeightRows>(space, arena, state, xq, y, epilogue,
                                         "TernaryCounter::forward::int8_epilogue")) {
      return;
    }
  }
  run_integer_product(space, xq, weights, state.C, M, state.out(), epilogue,
                      "TernaryCounter::forward::int8_product");
}

template <class ExecSpace>
void backward_input_int8(const ExecSpace& space,
                         const PackedState<typename ExecSpace::memory_space>& state,
                         const InputView<typename ExecSpace::memory_space>& grad_out,
                         const OutputView<typename ExecSpace::memory_space>& grad_x,
                         std::uint32_t seed, std::int64_t sample_offset) {
  using Mem = typename ExecSpace::memory_space;
  require_int8_bound("backward_input", "out", state.out(), int8_max_depth);
  const std::int64_t M = grad_out.extent(0);
  std::size_t bytes = QuantizedRows<Mem>::bytes(M, state.out());
  const std::int64_t few_sample_sums = few_sample_backward_input_sums(M, state.in());
  if constexpr (vendor_gemm_space<ExecSpace>) {
    bytes += few_sample_sums > 0 ? scratch_bytes<std::int32_t>(few_sample_sums)
                                 : decoded_block_scratch(state.in(), padded_depth(state.out()));
  }
  ScratchArena<ExecSpace> arena(space, bytes);
  const QuantizedRows<Mem> hq(space, arena, M, state.out());
  RowQuantizer<ExecSpace, true, true>{grad_out, state.scale, hq,
                                      stream_key(seed, int8_backward_input_tag), sample_offset}
      .run(space, "TernaryCounter::backward_input::quantize_grad_out");
  const BackwardInputEpilogue<Mem> epilogue{grad_x, hq.scale};
  if constexpr (vendor_gemm_space<ExecSpace>) {  // (HIP: the portable kernel, unmeasured there)
    if (few_sample_sums > 0) {
      const Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Mem> sums(
          arena.template take<std::int32_t>(few_sample_sums), M, state.in());
      few_sample_int8_backward_input(space, hq.q, hq.sums, state, M, sums, epilogue);
      return;
    }
    if (vendor_product<DecodeWeightColumns>(space, arena, state, hq, grad_x, epilogue,
                                            "TernaryCounter::backward_input::int8_epilogue")) {
      return;
    }
  }
  run_integer_product(space, hq, TernaryByDepth<Mem>{state.codes, state.C}, state.C, M, state.in(),
                      epilogue, "TernaryCounter::backward_input::int8_product");
}

template <class ExecSpace>
void update_from_io_int8(
    const ExecSpace& space, const PackedState<typename ExecSpace::memory_space>& state,
    const InputView<typename ExecSpace::memory_space>& x,
    const InputView<typename ExecSpace::memory_space>& grad_out, const UpdateParams& params,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& workspace,
    const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows) {
  using Mem = typename ExecSpace::memory_space;
  const std::int64_t M = x.extent(0), in = state.in(), out = state.out();
  require_int8_bound("update_from_io", "M (samples)", M, int8_max_samples);
  const UpdateConstants k = make_update_constants(params, out, in);
  // Hosts: xq [M, in] (ColumnQuantizer); GPUs: xq transposed, [in, Mp] (TiledColumnQuantizer).
  constexpr bool tiled_columns = !host_space<ExecSpace>;
  const std::int64_t xq_rows = tiled_columns ? in : M;
  const std::int64_t xq_cols = tiled_columns ? padded_depth(M) : in;
  // CUDA, M <= few_sample_update_max: x's words for FewSampleGradientRows.
  const std::int64_t few_sample_words =
      vendor_gemm_space<ExecSpace> && M <= few_sample_update_max ? (M + 3) / 4 : 0;
  ScratchArena<ExecSpace> arena(
      space, scratch_bytes<std::int8_t>(xq_rows * xq_cols) + scratch_bytes<float>(in) +
                 QuantizedRows<Mem>::bytes(out, M) +
                 (tiled_columns ? scratch_bytes<std::uint32_t>(in + out) : 0) +
                 scratch_bytes<std::uint32_t>(few_sample_words * in));
  const Int8Matrix<Mem> xq(arena.template take<std::int8_t>(xq_rows * xq_cols), xq_rows, xq_cols);
  const FloatVector<Mem> x_scale(arena.template take<float>(in), in);
  const QuantizedRows<Mem> gq(space, arena, out, M);
  const std::uint32_t key = stream_key(params.seed, int8_weight_gradient_tag);
  if constexpr (!tiled_columns) {
    ColumnQuantizer<ExecSpace>{x, grad_out, xq, x_scale, gq, key, k.row_offset}.run(
        space, "TernaryCounter::update_from_io::quantize_columns");
  } else {
    const Kokkos::View<std::uint32_t*, Mem> amax_bits(arena.template take<std::uint32_t>(in + out),
                                                      in + out);
    TiledColumnQuantizer<ExecSpace>{x,        grad_out, xq,        x_scale, gq.q,
                                    gq.scale, gq.sums,  amax_bits, key,     k.row_offset}
        .run(space);
  }
  Kokkos::deep_copy(space, skipped_rows, std::int64_t(0));
  if constexpr (vendor_gemm_space<ExecSpace>) {  // (HIP: the portable kernel, unmeasured there)
    if (few_sample_words > 0) {  // no gradient rows in memory: the update forms them
      const Kokkos::View<std::uint32_t**, Kokkos::LayoutRight, Mem> x_words(
          arena.template take<std::uint32_t>(few_sample_words * in), few_sample_words, in);
      pack_sample_words(space, xq, x_words);
      const FewSampleGradientRows<Mem> source{gq.q, x_words, gq.scale, x_scale,
                                              int(few_sample_words)};
      RowUpdateKernel<ExecSpace, false, FewSampleGradientRows<Mem>>{
          state.codes, state.scale, state.v, {}, k, skipped_rows, source}
          .enqueue(space, params.team_size);
      return;
    }
  }
  const std::int64_t chunk = std::max<std::int64_t>(1, workspace.extent(0));
  for (std::int64_t first = 0; first < out; first += chunk) {
    const std::pair<std::int64_t, std::int64_t> rows(first, std::min(out, first + chunk));
    const std::int64_t n = rows.second - rows.first;
    const auto gradient =
        Kokkos::subview(workspace, std::pair<std::int64_t, std::int64_t>(0, n), Kokkos::ALL);
    QuantizedRows<Mem> part = gq;
    part.q = Kokkos::subview(gq.q, rows, Kokkos::ALL);
    part.scale = Kokkos::subview(gq.scale, rows);
    part.sums = Kokkos::subview(gq.sums, rows);
    const GradientEpilogue<Mem> epilogue{gradient, part.scale, x_scale};
    const char* label = "TernaryCounter::update_from_io::int8_gradient";
    if constexpr (!tiled_columns) {
      run_integer_product(space, part, Int8ByDepth<Mem>{xq}, state.C, n, in, epilogue, label);
    } else {
      const std::int64_t depth = part.q.extent(1);
      if (vendor_int8_gemm(space, n, in, depth, part.q.data(), depth, xq.data(), depth,
                           gradient.data(), gradient.stride(0))) {
        if (RowUpdateKernel<ExecSpace>::vector_rows(gradient)) {  // the scales on the way in
          const IntegerSumRows<Mem> source{reinterpret_cast<const std::int32_t*>(gradient.data()),
                                           std::int64_t(gradient.stride(0)), part.scale, x_scale};
          UpdateConstants chunk_k = k;
          chunk_k.row_offset = k.row_offset + first;
          const auto rows_state = state.row_range(rows.first, rows.second);
          RowUpdateKernel<ExecSpace, false, IntegerSumRows<Mem>>{
              rows_state.codes, rows_state.scale, rows_state.v, {}, chunk_k, skipped_rows, source}
              .enqueue(space, params.team_size);
          continue;
        }
        finish_in_place(space, gradient, n, in, epilogue,
                        "TernaryCounter::update_from_io::int8_epilogue");
      } else {
        PortableIntegerProduct<ExecSpace, Int8ByColumn<Mem>, GradientEpilogue<Mem>>{
            Int8Rows<Mem>{part.q}, Int8ByColumn<Mem>{xq}, epilogue, n, in, depth / 4}
            .run(space, label);
      }
    }
    UpdateConstants chunk_k = k;
    chunk_k.row_offset = k.row_offset + first;
    const auto rows_state = state.row_range(rows.first, rows.second);
    RowUpdateKernel<ExecSpace> row_update{rows_state.codes, rows_state.scale, rows_state.v,
                                          gradient,         chunk_k,          skipped_rows};
    row_update.enqueue(space, params.team_size);
  }
}

template <class ExecSpace>
void int8_column_absmax(const ExecSpace& space,
                        const InputView<typename ExecSpace::memory_space>& x,
                        const InputView<typename ExecSpace::memory_space>& grad_out,
                        const AbsmaxBits<typename ExecSpace::memory_space>& amax_bits) {
  if constexpr (host_space<ExecSpace>) {
    ColumnQuantizer<ExecSpace> columns{x, grad_out, {}, {}, {}};
    columns.amax_bits = amax_bits;
    columns.pass = ColumnPass::absmax;
    columns.run(space, "TernaryCounter::Distributed::column_absmax");
  } else {
    TiledColumnQuantizer<ExecSpace>{x, grad_out, {}, {}, {}, {}, {}, amax_bits}.run_absmax(space);
  }
}

template <class ExecSpace>
void int8_quantize_operands(const ExecSpace& space,
                            const InputView<typename ExecSpace::memory_space>& x,
                            const InputView<typename ExecSpace::memory_space>& grad_out,
                            const AbsmaxBits<typename ExecSpace::memory_space>& amax_bits,
                            std::uint32_t seed, std::int64_t row_offset,
                            std::int64_t stream_samples, std::int64_t sample_offset,
                            Int8GradientOperands<typename ExecSpace::memory_space>& operands) {
  using Mem = typename ExecSpace::memory_space;
  const std::int64_t M = x.extent(0), in = x.extent(1), out = grad_out.extent(1);
  // Hosts: xq [M, in] (ColumnQuantizer); GPUs: xq transposed, [in, Mp] (TiledColumnQuantizer).
  constexpr bool tiled_columns = !host_space<ExecSpace>;
  const std::int64_t xq_rows = tiled_columns ? in : M;
  const std::int64_t xq_cols = tiled_columns ? padded_depth(M) : in;
  const auto sized = [](auto& view, const char* label, auto... extents) {
    const std::int64_t want[] = {std::int64_t(extents)...};
    bool same = true;
    for (std::size_t d = 0; d < sizeof...(extents); ++d) {
      same = same && std::int64_t(view.extent(d)) == want[d];
    }
    if (!same) {
      using View = std::decay_t<decltype(view)>;
      view = View(Kokkos::view_alloc(std::string("TernaryCounter::int8_operands::") + label,
                                     Kokkos::WithoutInitializing),
                  extents...);
    }
  };
  sized(operands.xq, "xq", xq_rows, xq_cols);
  sized(operands.x_scale, "x_scale", in);
  sized(operands.gq, "gq", out + int8_padding_rows, padded_depth(M));
  sized(operands.gq_scale, "gq_scale", out);
  sized(operands.gq_sums, "gq_sums", out);
  Kokkos::deep_copy(
      space,
      Kokkos::subview(operands.gq, std::make_pair(out, out + int8_padding_rows), Kokkos::ALL),
      std::int8_t(0));
  if (M == 0) return;  // no samples: int8_gradient_rows writes G_r = 0
  const std::uint32_t key = stream_key(seed, int8_weight_gradient_tag);
  if constexpr (!tiled_columns) {
    QuantizedRows<Mem> gq;
    gq.q = operands.gq;
    gq.scale = operands.gq_scale;
    gq.sums = operands.gq_sums;
    ColumnQuantizer<ExecSpace> columns{x,  grad_out, operands.xq, operands.x_scale,
                                       gq, key,      row_offset};
    columns.stream_samples = stream_samples;
    columns.sample_offset = sample_offset;
    columns.amax_bits = amax_bits;
    columns.pass = ColumnPass::quantize;
    columns.run(space, "TernaryCounter::Distributed::quantize_columns");
  } else {
    TiledColumnQuantizer<ExecSpace> columns{
        x,           grad_out,          operands.xq,      operands.x_scale,
        operands.gq, operands.gq_scale, operands.gq_sums, amax_bits,
        key,         row_offset};
    columns.stream_samples = stream_samples;
    columns.sample_offset = sample_offset;
    columns.run_quantize(space);
  }
}

template <class ExecSpace>
void int8_gradient_rows(const ExecSpace& space,
                        const Int8GradientOperands<typename ExecSpace::memory_space>& operands,
                        std::int64_t first_row,
                        const IntegerSums<typename ExecSpace::memory_space>& sums) {
  using Mem = typename ExecSpace::memory_space;
  const std::int64_t rows = sums.extent(0), in = sums.extent(1);
  if (rows == 0) return;
  if (operands.gq.extent(1) == 0) {  // no samples: G_r = 0
    Kokkos::deep_copy(space, sums, 0);
    return;
  }
  const std::pair<std::int64_t, std::int64_t> range(first_row, first_row + rows);
  QuantizedRows<Mem> part;
  part.q = Kokkos::subview(operands.gq, range, Kokkos::ALL);
  part.scale = Kokkos::subview(operands.gq_scale, range);
  part.sums = Kokkos::subview(operands.gq_sums, range);
  const IntegerSumsEpilogue<Mem> epilogue{sums};
  const char* label = "TernaryCounter::Distributed::int8_gradient_sums";
  if constexpr (host_space<ExecSpace>) {
    run_integer_product(space, part, Int8ByDepth<Mem>{operands.xq}, 2, rows, in, epilogue, label);
  } else {
    const std::int64_t depth = part.q.extent(1);
    if (!vendor_int8_gemm(space, rows, in, depth, part.q.data(), depth, operands.xq.data(), depth,
                          reinterpret_cast<float*>(sums.data()), sums.stride(0))) {
      PortableIntegerProduct<ExecSpace, Int8ByColumn<Mem>, IntegerSumsEpilogue<Mem>>{
          Int8Rows<Mem>{part.q}, Int8ByColumn<Mem>{operands.xq}, epilogue, rows, in, depth / 4}
          .run(space, label);
    }
  }
}

template <class ExecSpace>
void int8_gradient_sums(const ExecSpace& space,
                        const InputView<typename ExecSpace::memory_space>& x,
                        const InputView<typename ExecSpace::memory_space>& grad_out,
                        const AbsmaxBits<typename ExecSpace::memory_space>& amax_bits,
                        std::uint32_t seed, std::int64_t row_offset, std::int64_t stream_samples,
                        std::int64_t sample_offset,
                        const IntegerSums<typename ExecSpace::memory_space>& sums) {
  Int8GradientOperands<typename ExecSpace::memory_space> operands;
  int8_quantize_operands(space, x, grad_out, amax_bits, seed, row_offset, stream_samples,
                         sample_offset, operands);
  int8_gradient_rows(space, operands, 0, sums);
}

template <class ExecSpace>
void int8_update_from_sums(const ExecSpace& space,
                           const PackedState<typename ExecSpace::memory_space>& rows,
                           const IntegerSums<typename ExecSpace::memory_space>& sums,
                           const AbsmaxBits<typename ExecSpace::memory_space>& amax_bits,
                           std::int64_t first_row, const UpdateParams& params,
                           const SkippedRowsView<typename ExecSpace::memory_space>& skipped_rows) {
  using Mem = typename ExecSpace::memory_space;
  const std::int64_t n = rows.out(), in = rows.in();
  const UpdateConstants k = make_update_constants(params, n, in);
  Kokkos::deep_copy(space, skipped_rows, std::int64_t(0));
  if (n == 0) return;
  // g = float(G) * (sg * sx), GradientEpilogue's arithmetic, in place over G.
  const Kokkos::View<float**, Kokkos::LayoutRight, Mem> gradient(
      reinterpret_cast<float*>(sums.data()), n, in);
  Kokkos::parallel_for(
      "TernaryCounter::Distributed::int8_gradient",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>(space, {0, 0}, {n, in}),
      KOKKOS_LAMBDA(std::int64_t r, std::int64_t i) {
        const float sg = dequantization_scale(absmax_from_bits(amax_bits(in + first_row + r)));
        const float sx = dequantization_scale(absmax_from_bits(amax_bits(i)));
        gradient(r, i) = float(sums(r, i)) * (sg * sx);
      });
  RowUpdateKernel<ExecSpace> row_update{rows.codes, rows.scale, rows.v, gradient, k, skipped_rows};
  row_update.enqueue(space, params.team_size);
}

#define TERNARYCOUNTER_INSTANTIATE_INTEGER_PATH(SPACE)                                             \
  template void forward_int8<SPACE>(const SPACE&, const PackedState<SPACE::memory_space>&,         \
                                    const InputView<SPACE::memory_space>&,                         \
                                    const OutputView<SPACE::memory_space>&);                       \
  template void backward_input_int8<SPACE>(const SPACE&, const PackedState<SPACE::memory_space>&,  \
                                           const InputView<SPACE::memory_space>&,                  \
                                           const OutputView<SPACE::memory_space>&, std::uint32_t,  \
                                           std::int64_t);                                          \
  template void update_from_io_int8<SPACE>(                                                        \
      const SPACE&, const PackedState<SPACE::memory_space>&,                                       \
      const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&,                \
      const UpdateParams&, const Kokkos::View<float**, Kokkos::LayoutRight, SPACE::memory_space>&, \
      const SkippedRowsView<SPACE::memory_space>&);                                                \
  template void int8_column_absmax<SPACE>(const SPACE&, const InputView<SPACE::memory_space>&,     \
                                          const InputView<SPACE::memory_space>&,                   \
                                          const AbsmaxBits<SPACE::memory_space>&);                 \
  template void int8_quantize_operands<SPACE>(                                                     \
      const SPACE&, const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&,  \
      const AbsmaxBits<SPACE::memory_space>&, std::uint32_t, std::int64_t, std::int64_t,           \
      std::int64_t, Int8GradientOperands<SPACE::memory_space>&);                                   \
  template void int8_gradient_rows<SPACE>(const SPACE&,                                            \
                                          const Int8GradientOperands<SPACE::memory_space>&,        \
                                          std::int64_t, const IntegerSums<SPACE::memory_space>&);  \
  template void int8_gradient_sums<SPACE>(                                                         \
      const SPACE&, const InputView<SPACE::memory_space>&, const InputView<SPACE::memory_space>&,  \
      const AbsmaxBits<SPACE::memory_space>&, std::uint32_t, std::int64_t, std::int64_t,           \
      std::int64_t, const IntegerSums<SPACE::memory_space>&);                                      \
  template void int8_update_from_sums<SPACE>(                                                      \
      const SPACE&, const PackedState<SPACE::memory_space>&,                                       \
      const IntegerSums<SPACE::memory_space>&, const AbsmaxBits<SPACE::memory_space>&,             \
      std::int64_t, const UpdateParams&, const SkippedRowsView<SPACE::memory_space>&);

TERNARYCOUNTER_FOR_EACH_EXECUTION_SPACE(TERNARYCOUNTER_INSTANTIATE_INTEGER_PATH)

}  // namespace TernaryCounter::Impl
