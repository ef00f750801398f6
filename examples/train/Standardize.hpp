// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Per-pixel input standardization: x = (pixel - mean) / std with the mean and standard deviation
// of each pixel over the training images (host, double sums in image order, so every backend
// and thread count gets the same floats). Pixels that never vary (std 0) map to 0.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace TernaryCounter::Train {

struct Standardizer {
  std::vector<float> mean, inv_std;

  /// Statistics of the first `count` images of `images` [*, pixels].
  static Standardizer fit(const std::vector<std::uint8_t>& images, std::int64_t count,
                          std::int64_t pixels) {
    std::vector<double> sum(pixels, 0.0), sum_sq(pixels, 0.0);
    for (std::int64_t n = 0; n < count; ++n) {
      for (std::int64_t p = 0; p < pixels; ++p) {
        const double v = images[n * pixels + p];
        sum[p] += v;
        sum_sq[p] += v * v;
      }
    }
    Standardizer s;
    for (std::int64_t p = 0; p < pixels; ++p) {
      const double mean = sum[p] / double(count);
      const double var = std::max(sum_sq[p] / double(count) - mean * mean, 0.0);
      s.mean.push_back(float(mean));
      s.inv_std.push_back(var > 1e-12 ? float(1.0 / std::sqrt(var)) : 0.0f);
    }
    return s;
  }

  /// The first `count` images of `images`, standardized, as floats [count, pixels].
  std::vector<float> apply(const std::vector<std::uint8_t>& images, std::int64_t count) const {
    const std::int64_t pixels = std::int64_t(mean.size());
    std::vector<float> out(std::size_t(count * pixels));
    for (std::int64_t n = 0; n < count; ++n) {
      for (std::int64_t p = 0; p < pixels; ++p) {
        out[n * pixels + p] = (float(images[n * pixels + p]) - mean[p]) * inv_std[p];
      }
    }
    return out;
  }
};

}  // namespace TernaryCounter::Train
