// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "FashionMnist.hpp"

#include <ContentIdentity.hpp>
#include <Idx.hpp>

#include <filesystem>

namespace TernaryCounter::Train {

namespace {

constexpr const char* stems[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                  "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
constexpr std::uint32_t side = 28;

// Reads an IDX file (once) and records the identity of its decompressed bytes.
Idx::Array read_recorded(const std::string& path, FashionMnist& data) {
  const std::string bytes = Idx::read_bytes(path);
  data.identities.emplace_back(std::filesystem::path(path).filename().string(),
                               Examples::content_identity(bytes));
  return Idx::parse(bytes, path);
}

ImageSet load_set(const std::string& dir, const char* images_stem, const char* labels_stem,
                  FashionMnist& data) {
  const std::string images_path = find_idx_file(dir, images_stem);
  const std::string labels_path = find_idx_file(dir, labels_stem);
  if (images_path.empty() || labels_path.empty()) {
    throw Idx::IdxError(dir + ": no " + (images_path.empty() ? images_stem : labels_stem) +
                        "[.gz] (install dataset-fashion-mnist or pass --data-dir)");
  }
  Idx::Array images = read_recorded(images_path, data);
  if (images.dims.size() != 3 || images.dims[1] != side || images.dims[2] != side) {
    std::string shape;
    for (std::size_t d = 0; d < images.dims.size(); ++d) {
      shape += (d ? "x" : "") + std::to_string(images.dims[d]);
    }
    throw Idx::IdxError(images_path + ": images of shape " + shape + ", expected Nx28x28");
  }
  Idx::Array labels = read_recorded(labels_path, data);
  Idx::check_labels(labels, images.dims[0], fashion_mnist_classes, labels_path);
  ImageSet set;
  set.count = images.dims[0];
  set.pixels = std::int64_t(side) * side;
  set.images = std::move(images.data);
  set.labels = std::move(labels.data);
  return set;
}

}  // namespace

std::string find_idx_file(const std::string& dir, const std::string& stem) {
  for (const std::string name : {stem, stem + ".gz"}) {
    const std::filesystem::path path = std::filesystem::path(dir) / name;
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return path.string();
  }
  return "";
}

std::string missing_fashion_mnist_file(const std::string& dir) {
  for (const char* stem : stems) {
    if (find_idx_file(dir, stem).empty()) return stem;
  }
  return "";
}

FashionMnist load_fashion_mnist(const std::string& dir) {
  FashionMnist data;
  data.train = load_set(dir, stems[0], stems[1], data);
  data.test = load_set(dir, stems[2], stems[3], data);
  return data;
}

}  // namespace TernaryCounter::Train
