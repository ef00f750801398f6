// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A startup check of the vendor GEMM against a host loop: catches a wrong transpose or leading
// dimension, and reduced-precision math (TF32 rounds inputs to 10 mantissa bits, ~5e-4).
#pragma once

#include "PerfInputs.hpp"
#include "VendorGemm.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace TernaryCounter::Perf {

/// Runs c = op(a) op(b) on a small non-square shape and compares every entry with a double
/// reference: |got - ref| must stay within 1e-5 * sum_k |a b|, above the FP32 worst case for a
/// depth of 64 (about 4e-6) and far below TF32's error. Returns the largest error as a fraction
/// of that tolerance; throws std::runtime_error when it exceeds 1.
inline double self_check_vendor_product(const ExecSpace& space, const VendorGemm& vendor,
                                        bool transpose_a, bool transpose_b) {
  const int rows = 37, cols = 24, depth = 64;
  const Matrix a("TernaryCounter::Perf::check.a", transpose_a ? depth : rows,
                 transpose_a ? rows : depth);
  const Matrix b("TernaryCounter::Perf::check.b", transpose_b ? cols : depth,
                 transpose_b ? depth : cols);
  const Matrix c("TernaryCounter::Perf::check.c", rows, cols);
  fill_normal(space, a, 101, 1.0f);
  fill_normal(space, b, 102, 1.0f);
  vendor.gemm(transpose_a, transpose_b, a, b, c);
  space.fence("TernaryCounter::Perf::self_check");
  const auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  const auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  const auto hc = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c);
  double worst = 0.0;
  for (int r = 0; r < rows; ++r) {
    for (int col = 0; col < cols; ++col) {
      double ref = 0.0, magnitude = 0.0;
      for (int k = 0; k < depth; ++k) {
        const double term = double(transpose_a ? ha(k, r) : ha(r, k)) *
                            double(transpose_b ? hb(col, k) : hb(k, col));  // exact in double
        ref += term;
        magnitude += std::abs(term);
      }
      const double error = std::abs(double(hc(r, col)) - ref) / (1e-5 * magnitude + 1e-30);
      if (!(error <= 1.0)) {
        std::ostringstream msg;
        msg << "vendor GEMM self-check failed on " << rows << "x" << cols << "x" << depth
            << " (transpose a " << transpose_a << ", b " << transpose_b << "): c(" << r << ", "
            << col << ") = " << hc(r, col) << " but the reference is " << ref << " (tolerance "
            << 1e-5 * magnitude << ")";
        throw std::runtime_error(msg.str());
      }
      worst = std::max(worst, error);
    }
  }
  return worst;
}

/// The self-check of the three products the driver uses (grad_w, forward, backward_input).
inline double self_check_vendor_gemm(const ExecSpace& space, const VendorGemm& vendor) {
  double worst = 0.0;
  for (const auto [ta, tb] :
       {std::pair{true, false}, std::pair{false, true}, std::pair{false, false}}) {
    worst = std::max(worst, self_check_vendor_product(space, vendor, ta, tb));
  }
  return worst;
}

}  // namespace TernaryCounter::Perf
