// A startup check of the vendor GEMM against a host loop: catches a wrong transpose or leading
// dimension, and reduced-precision math (TF32 rounds inputs to 10 mantissa bits, ~5e-4).
#pragma once

#include "PerfInputs.hpp"
#include "VendorGemm.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace TernaryCounter::Perf {

/// Runs the vendor GEMM on a small non-square shape and compares every entry with a double
/// reference: |got - ref| must stay within 1e-5 * sum_m |grad_out[m,o] x[m,i]|, above the
/// FP32 worst case for M = 64 (about 4e-6) and far below TF32's error. Returns the largest
/// error as a fraction of that tolerance; throws std::runtime_error when it exceeds 1.
inline double self_check_vendor_gemm(const ExecSpace& space, const VendorGemm& vendor) {
  const int out = 37, in = 24, m = 64;
  const Matrix x("TernaryCounter::Perf::check.x", m, in);
  const Matrix grad_out("TernaryCounter::Perf::check.grad_out", m, out);
  const Matrix grad_w("TernaryCounter::Perf::check.grad_w", out, in);
  fill_normal(space, x, 101, 1.0f);
  fill_normal(space, grad_out, 102, 1.0f);
  vendor.grad_w(x, grad_out, grad_w);
  space.fence("TernaryCounter::Perf::self_check");
  const auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  const auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), grad_out);
  const auto hg = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), grad_w);
  double worst = 0.0;
  for (int o = 0; o < out; ++o) {
    for (int i = 0; i < in; ++i) {
      double ref = 0.0, magnitude = 0.0;
      for (int k = 0; k < m; ++k) {
        const double term = double(hd(k, o)) * double(hx(k, i));  // exact in double
        ref += term;
        magnitude += std::abs(term);
      }
      const double error = std::abs(double(hg(o, i)) - ref) / (1e-5 * magnitude + 1e-30);
      if (!(error <= 1.0)) {
        std::ostringstream msg;
        msg << "vendor GEMM self-check failed on " << out << "x" << in << "x" << m << ": grad_w("
            << o << ", " << i << ") = " << hg(o, i) << " but the reference is " << ref
            << " (tolerance " << 1e-5 * magnitude << ")";
        throw std::runtime_error(msg.str());
      }
      worst = std::max(worst, error);
    }
  }
  return worst;
}

}  // namespace TernaryCounter::Perf
