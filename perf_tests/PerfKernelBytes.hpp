// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The bytes each kernel of a layer step must move (ternary-counter-perf --kernels): a model keyed
// by kernel label, from what the kernel's source reads and writes, as a function of the layer's
// out x in (O x I), the samples M, the precision and the launches of the label in one step. Each
// operand counts once per launch and each result once: the compulsory traffic of the launch,
// not what re-reads from a cache or atomics add. A label the model does not know has no entry
// (the report shows "-"), never a guess.
//
// Symbols below: codes = O * I * 3 / 4 (the packed state), Kin / Kout / Mp = in / out / M padded
// to int8_depth_padding (64, the quantized operands' depth), L = the label's launches in the
// step (update_from_io's chunks of rows, the vendor product's blocks), w = ceil(M / 4). The
// step's data are float32 (4 bytes an element); scales and sums are 4 bytes.
#pragma once

#include "PerfKernelReport.hpp"

#include <TernaryCounter.hpp>

#include "engines/TernaryCounter_IntegerOperands.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace TernaryCounter::Perf {

/// The layer step a report row belongs to, and which row update its update_from_io runs (the
/// row update's one label, TernaryCounter::row_update, reads its gradient from one of four
/// sources: layer_step_kind says which, from the other labels of the step).
struct LayerShape {
  std::int64_t out = 0, in = 0, m = 0;
  Precision precision = Precision::fp32;
  bool host = true;  ///< a host backend (the int8 operands' layouts differ from the GPUs')
  enum class RowUpdateSource {
    stored_gradient,   ///< float rows in the workspace (the tile engine's, the hosts' int8)
    integer_sums,      ///< the vendor GEMM's int32 rows, scaled on the way in (CUDA int8)
    few_sample_int8,   ///< formed from the quantized operands (CUDA int8, M <= 16)
    few_sample_float,  ///< formed from x and grad_out (CUDA FP32, M <= 2)
  } row_update_source = RowUpdateSource::stored_gradient;
};

/// A row's modelled traffic and, for a GEMM, its operations (2 per multiply-add of the layer's
/// product, padding left out; 0 otherwise).
struct KernelCost {
  double bytes = 0;
  double ops = 0;
};

/// The row update's gradient source, from the labels of one layer step (KernelBreakdown rows).
inline LayerShape::RowUpdateSource row_update_source(const std::vector<KernelRow>& rows,
                                                     Precision precision) {
  bool gradient_tiles = false, int8_gradient = false, pack_words = false, vendor_update = false;
  for (const KernelRow& row : rows) {
    const std::string& n = row.name;
    gradient_tiles = gradient_tiles || n == "TernaryCounter::update_from_io::gradient_tiles";
    int8_gradient = int8_gradient ||
                    n.rfind("TernaryCounter::update_from_io::int8_gradient", 0) == 0 ||
                    n == "TernaryCounter::update_from_io::int8_epilogue";
    pack_words = pack_words || n == "TernaryCounter::update_from_io::pack_sample_words";
    vendor_update = vendor_update || (row.kind == KernelRowKind::vendor &&
                                      row.region == "TernaryCounter::update_from_io");
  }
  using S = LayerShape::RowUpdateSource;
  if (precision == Precision::fp32)
    return gradient_tiles ? S::stored_gradient : S::few_sample_float;
  if (pack_words) return S::few_sample_int8;
  if (vendor_update && !int8_gradient) return S::integer_sums;
  return S::stored_gradient;
}

namespace Detail {

/// An integer engine's label ends in its name (hosts: "::avx2", "::vnni", "::amx"; CUDA:
/// "::tensor_cores"): the same compulsory traffic as the portable engine's label.
inline std::string without_engine(const std::string& label) {
  for (const char* engine : {"::avx2", "::vnni", "::amx", "::tensor_cores"}) {
    const std::string suffix = engine;
    if (label.size() > suffix.size() &&
        label.compare(label.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return label.substr(0, label.size() - suffix.size());
    }
  }
  return label;
}

}  // namespace Detail

/// The modelled bytes (and a GEMM's operations) of a report row over one layer step; none for a
/// label the model does not know, for "other" and "outside" rows.
inline std::optional<KernelCost> kernel_cost(const KernelRow& row, const LayerShape& s,
                                             std::int64_t launches) {
  const double M = double(s.m), I = double(s.in), O = double(s.out), L = double(launches);
  const double Kin = double(Impl::padded_depth(s.in)), Kout = double(Impl::padded_depth(s.out));
  const double Mp = double(Impl::padded_depth(s.m)), w = double((s.m + 3) / 4);
  const double codes = O * double(s.in / 4 * 3);
  const double product_ops = 2.0 * M * I * O;
  const auto bytes = [](double b) { return std::optional<KernelCost>(KernelCost{b, 0.0}); };
  const auto gemm = [&](double b) { return std::optional<KernelCost>(KernelCost{b, product_ops}); };

  if (row.kind == KernelRowKind::copy) return bytes(row.copy_bytes);  // as Kokkos reports it
  if (row.kind == KernelRowKind::vendor) {
    if (row.name != "TernaryCounter::vendor_int8_gemm") return std::nullopt;
    // cuBLAS' int8 GEMM (TernaryCounter_CublasInt8.cpp): both operands int8 with the depth
    // contiguous, int32 sums written into the output's memory.
    if (row.region == "TernaryCounter::forward") {
      // xq [M, Kin] once per block of W's rows, the decoded rows [O, Kin], sums [M, O].
      return gemm(L * M * Kin + O * Kin + 4 * M * O);
    }
    if (row.region == "TernaryCounter::backward_input") {
      // hq [M, Kout] once per block of W's columns, the decoded columns [I, Kout], sums [M, I].
      return gemm(L * M * Kout + I * Kout + 4 * M * I);
    }
    if (row.region == "TernaryCounter::update_from_io") {
      // gq's rows [O, Mp], xq [I, Mp] once per chunk of rows, int32 sums [O, I].
      return gemm(O * Mp + L * I * Mp + 4 * O * I);
    }
    return std::nullopt;
  }
  if (row.kind != KernelRowKind::kernel) return std::nullopt;

  const std::string label = Detail::without_engine(row.name);
  // FP32 products (tile engine; on GPUs the few-sample and small-batch kernels read the same):
  // the input, the codes and the rows' scales read, the output written.
  for (const char* kernel : {"tiles", "few_sample", "small_batch"}) {
    if (label == std::string("TernaryCounter::forward::") + kernel) {
      return gemm(4 * M * I + codes + 4 * O + 4 * M * O);  // x, codes, scale; y
    }
    if (label == std::string("TernaryCounter::backward_input::") + kernel) {
      return gemm(4 * M * O + codes + 4 * O + 4 * M * I);  // grad_out, codes, scale; grad_x
    }
  }
  if (label == "TernaryCounter::update_from_io::gradient_tiles") {
    // Per chunk of rows: grad_out's columns of the chunk, all of x; the chunk's gradient rows.
    return gemm(4 * M * O + L * 4 * M * I + 4 * O * I);
  }
  if (label == "TernaryCounter::row_update") {
    // SPEC §3 steps 2-11 (RowUpdateKernel): codes read and written, scale and v read and
    // written (16 bytes a row), plus the gradient from its source.
    const double state = 2 * codes + 16 * O;
    switch (s.row_update_source) {
      case LayerShape::RowUpdateSource::stored_gradient:
        return bytes(state + 4 * O * I);  // the float gradient rows
      case LayerShape::RowUpdateSource::integer_sums:
        // IntegerSumRows: int32 rows, sg per row, sx per chunk.
        return bytes(state + 4 * O * I + 4 * O + L * 4 * I);
      case LayerShape::RowUpdateSource::few_sample_int8:
        // FewSampleGradientRows: w words of gq per row, x's words [w, I], sg, sx.
        return bytes(state + 4 * w * O + 4 * w * I + 4 * O + 4 * I);
      case LayerShape::RowUpdateSource::few_sample_float:
        // FewSampleFloatGradientRows: x [M, I] and grad_out [M, O].
        return bytes(state + 4 * M * (I + O));
    }
    return std::nullopt;
  }

  // The integer path (SPEC §6).
  if (label == "TernaryCounter::forward::quantize_x") {
    // RowQuantizer: x read; xq [M, Kin] (zero-padded depth), its scales and sums written.
    return bytes(4 * M * I + M * Kin + 8 * M);
  }
  if (label == "TernaryCounter::backward_input::quantize_grad_out") {
    // RowQuantizer, scaled: grad_out and the rows' scales read; hq [M, Kout], scales, sums.
    return bytes(4 * M * O + 4 * O + M * Kout + 8 * M);
  }
  if (label == "TernaryCounter::forward::int8_product" ||
      label == "TernaryCounter::forward::int8_few_samples") {
    // xq with its scales and sums, the codes, the rows' scales read; y written by the epilogue.
    return gemm(M * Kin + 8 * M + codes + 4 * O + 4 * M * O);
  }
  if (label == "TernaryCounter::backward_input::int8_product") {
    // hq with its scales and sums, the codes read; grad_x written by the epilogue.
    return gemm(M * Kout + 8 * M + codes + 4 * M * I);
  }
  if (label == "TernaryCounter::backward_input::int8_few_samples") {
    // hq and the codes read; each int32 sum of [M, I] read and written (atomic adds) at least
    // once.
    return gemm(M * Kout + codes + 8 * M * I);
  }
  if (label == "TernaryCounter::backward_input::int8_few_samples_epilogue") {
    return bytes(4 * M * I + 8 * M + 4 * M * I);  // sums, hq's sums and scales; grad_x
  }
  if (label == "TernaryCounter::forward::int8_decode_rows") {
    return bytes(codes + O * Kin);  // codes read, int8 rows [O, Kin] written (all blocks)
  }
  if (label == "TernaryCounter::backward_input::int8_decode_columns") {
    return bytes(codes + I * Kout);  // codes read, int8 columns [I, Kout] written (all blocks)
  }
  if (label == "TernaryCounter::forward::int8_epilogue") {
    return bytes(8 * M * O + 4 * M + 4 * O);  // y's int32 sums read, its floats written in place
  }
  if (label == "TernaryCounter::backward_input::int8_epilogue") {
    return bytes(8 * M * I + 4 * M);  // grad_x's sums read, floats written in place
  }
  if (label == "TernaryCounter::update_from_io::column_absmax") {
    // TiledColumnQuantizer pass 1: x and grad_out read, the columns' absmax bits written.
    return bytes(4 * M * (I + O) + 4 * (I + O));
  }
  if (label == "TernaryCounter::update_from_io::quantize_columns") {
    if (s.host) {
      // ColumnQuantizer (absmax and quantization in one pass): x and grad_out read; xq [M, I],
      // gq [O, Mp] (transposed, padded), x's and gq's scales and gq's sums written.
      return bytes(4 * M * (I + O) + M * I + O * Mp + 4 * I + 8 * O);
    }
    // TiledColumnQuantizer pass 2: x, grad_out and the absmax bits read; xq [I, Mp] and
    // gq [O, Mp] (transposed, padded), the scales and gq's sums written.
    return bytes(4 * M * (I + O) + 4 * (I + O) + Mp * (I + O) + 4 * (I + O) + 4 * O);
  }
  if (label == "TernaryCounter::update_from_io::int8_gradient") {
    // Per chunk: the chunk's gq rows with scales and sums, all of xq and x's scales; the
    // chunk's float gradient rows written by the epilogue. xq is [M, I] on hosts, [I, Mp] on
    // GPUs (the portable engine).
    const double xq = s.host ? M * I : I * Mp;
    return gemm(O * Mp + 8 * O + L * (xq + 4 * I) + 4 * O * I);
  }
  if (label == "TernaryCounter::update_from_io::int8_epilogue") {
    return bytes(8 * O * I + 4 * O + L * 4 * I);  // int32 rows read, float rows written
  }
  if (label == "TernaryCounter::update_from_io::pack_sample_words") {
    return bytes(8 * w * I);  // w words of each of xq's I columns read, x_words [w, I] written
  }
  return std::nullopt;
}

}  // namespace TernaryCounter::Perf
