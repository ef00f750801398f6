// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// libFuzzer target: any bytes given to parse_checkpoint either load or throw CheckpointError;
// anything else (another exception, a crash, a sanitizer report, a leak) is a finding. A file
// that loads must serialize and load again to the same layers.
#include <TernaryCounter.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  Kokkos::initialize(*argc, *argv);
  std::atexit([] { Kokkos::finalize(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  TernaryCounter::Checkpoint checkpoint;
  try {
    checkpoint = TernaryCounter::parse_checkpoint(bytes, "fuzz input");
  } catch (const TernaryCounter::CheckpointError&) {
    return 0;
  }
  const TernaryCounter::Checkpoint again =
      TernaryCounter::parse_checkpoint(TernaryCounter::serialize_checkpoint(checkpoint));
  if (again.layers.size() != checkpoint.layers.size() || again.step != checkpoint.step ||
      again.C != checkpoint.C || again.metadata != checkpoint.metadata) {
    std::abort();
  }
  for (std::size_t k = 0; k < again.layers.size(); ++k) {
    const auto& a = again.layers[k].state;
    const auto& b = checkpoint.layers[k].state;
    if (a.codes.span() != b.codes.span() ||
        std::memcmp(a.codes.data(), b.codes.data(), a.codes.span()) != 0) {
      std::abort();
    }
  }
  return 0;
}
