// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The Fashion-MNIST data set on the host: 60,000 training and 10,000 test images of 28x28
// unsigned-byte pixels with labels 0..9, read from the four IDX files (plain or .gz) that
// Debian's dataset-fashion-mnist installs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace TernaryCounter::Train {

inline constexpr int fashion_mnist_classes = 10;
inline constexpr const char* fashion_mnist_default_dir = "/usr/share/datasets/fashion-mnist";

/// Images [count, pixels] (row-major bytes) and their labels.
struct ImageSet {
  std::int64_t count = 0, pixels = 0;
  std::vector<std::uint8_t> images, labels;
};

struct FashionMnist {
  ImageSet train, test;
  /// (file name, content identity) of the four files read, for the ranks' agreement.
  std::vector<std::pair<std::string, std::string>> identities;
};

/// The first of dir/<stem> and dir/<stem>.gz that exists, or "" when neither does.
std::string find_idx_file(const std::string& dir, const std::string& stem);

/// "" when all four files are in `dir`; otherwise the name of the first one that is missing.
std::string missing_fashion_mnist_file(const std::string& dir);

/// Reads and checks the four files: images of rank 3 and 28x28, one label per image, every
/// label below 10. Throws Idx::IdxError naming the file for anything else.
FashionMnist load_fashion_mnist(const std::string& dir);

}  // namespace TernaryCounter::Train
