// forward for one to four samples on GPUs (token-by-token inference, tiny batches). A thread owns
// one output column o: it reads its row's codes once, 0.75 byte per weight, decodes them in
// registers and runs the fma chains of all its samples; every thread of a warp reads the same
// sample values (one uniform load serves 32 rows). With so few samples a decoded weight is used at
// most four times, so staging it in shared memory for a team (SmallBatchProduct, which computes 16
// sample chains whatever M is) costs more than decoding it where it is used. Each element is the
// documented fma chain over the depth in ascending order: the bits equal the other kernels'.
#pragma once

#include "impl/TernaryCounter_Float4.hpp"
#include "impl/TernaryCounter_TileOperands.hpp"
#include "impl/TernaryCounter_Unroll.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace TernaryCounter::Impl {

/// The chains of `Samples` samples (1, 2 or 4; samples from M on read sample M - 1 and are not
/// stored) for one output column per thread.
template <class ExecSpace, class Product, int Samples>
struct FewSampleForward {
  using Weights = decltype(Product::b);
  static_assert(Weights::along_depth, "forward: a row of codes runs along the depth");
  using Run = typename Weights::CodeRun;
  /// Depth indices per step: four 16-code runs, 48 bytes in three vector loads.
  static constexpr int step_depth = 64;
  static constexpr int runs_per_step = step_depth / Weights::run_codes;
  static_assert(runs_per_step == 4, "a step is what TernaryOperand::fetch_run_quad loads");
  /// Steps loaded ahead: a thread per column gives a multiprocessor only ~128 threads on large
  /// layers, so each keeps the next two steps of its row in flight while it works on one.
  static constexpr int prefetch_steps = 2;

  Product product;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t o) const {
    const Weights& w = product.b;
    const std::int64_t depth = product.depth(), samples = product.rows();
    const float* x0 = product.a.view.data();
    const std::int64_t ld = product.a.view.stride(0);
    std::int64_t row[Samples];  // the same in every thread: uniform registers
    for (int s = 0; s < Samples; ++s) row[s] = Kokkos::min(std::int64_t(s), samples - 1) * ld;
    float acc[Samples] = {};
    // A ring of steps in flight, indexed at compile time (the loop over it is unrolled).
    Run ring[prefetch_steps][runs_per_step];
    for (int b = 0; b < prefetch_steps; ++b) {
      if (b * step_depth < depth) w.fetch_run_quad(b * step_depth, o, ring[b]);
    }
    for (std::int64_t k0 = 0; k0 < depth; k0 += prefetch_steps * step_depth) {
      TERNARYCOUNTER_UNROLL
      for (int b = 0; b < prefetch_steps; ++b) {
        const std::int64_t k = k0 + b * step_depth;
        if (k >= depth) break;
        Run step[runs_per_step];
        for (int r = 0; r < runs_per_step; ++r) step[r] = ring[b][r];
        if (k + prefetch_steps * step_depth < depth) {
          w.fetch_run_quad(k + prefetch_steps * step_depth, o, ring[b]);
        }
        TERNARYCOUNTER_UNROLL
        for (int r = 0; r < runs_per_step; ++r) {
          float t[Weights::run_codes];
          w.expand_run(step[r], t);
          TERNARYCOUNTER_UNROLL
          for (int q = 0; q < Weights::run_codes; q += 4) {
            const std::int64_t kq = k + Weights::run_codes * r + q;
            Float4 xs[Samples];
            for (int s = 0; s < Samples; ++s) {
              xs[s] = *reinterpret_cast<const Float4*>(x0 + row[s] + kq);
            }
            for (int e = 0; e < 4; ++e) {
              for (int s = 0; s < Samples; ++s) {
                acc[s] = Kokkos::fma(xs[s].v[e], t[q + e], acc[s]);
              }
            }
          }
        }
      }
    }
    for (int s = 0; s < Samples; ++s) {
      if (s < samples) product.store(s, o, acc[s]);
    }
  }
};

/// Runs forward by FewSampleForward when it serves the product: 1 to 4 samples in 16-byte aligned
/// rows, a depth of whole steps and 16-byte aligned code rows (the usual layer shapes). Returns
/// whether it ran.
template <class ExecSpace, class Product>
bool run_few_sample_forward(const ExecSpace& space, const Product& product, const char* label) {
  constexpr int step_depth = FewSampleForward<ExecSpace, Product, 1>::step_depth;
  const std::int64_t samples = product.rows(), cols = product.cols();
  if (samples < 1 || samples > 4 || cols == 0 || product.depth() == 0 || !product.a.vector ||
      !product.b.covers(0, 1, step_depth) || !product.b.pair_aligned()) {
    return false;
  }
  const auto launch = [&](auto kernel) {
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<ExecSpace, Kokkos::LaunchBounds<128, 2>>(space, 0, cols),
        kernel);
  };
  if (samples == 1) {
    launch(FewSampleForward<ExecSpace, Product, 1>{product});
  } else if (samples == 2) {
    launch(FewSampleForward<ExecSpace, Product, 2>{product});
  } else {
    launch(FewSampleForward<ExecSpace, Product, 4>{product});
  }
  return true;
}

}  // namespace TernaryCounter::Impl
