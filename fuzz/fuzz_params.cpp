// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// libFuzzer target: update parameters and layer shapes from raw bytes. A call either throws
// std::invalid_argument before anything changes, or runs a dense update on a small state whose
// results are finite; validate() must never accept values whose float32 copies are inf or 0.
#include <TernaryCounter.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace {

template <class T>
T take(const std::uint8_t*& data, std::size_t& size) {
  T value{};
  const std::size_t n = size < sizeof(T) ? size : sizeof(T);
  std::memcpy(&value, data, n);
  data += n;
  size -= n;
  return value;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  Kokkos::initialize(*argc, *argv);
  std::atexit([] { Kokkos::finalize(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  TernaryCounter::UpdateParams p;
  p.C = take<std::int8_t>(data, size);
  p.lr = take<double>(data, size);
  p.lr_scale = take<double>(data, size);
  p.rms_beta = take<double>(data, size);
  p.rms_eps = take<double>(data, size);
  p.clip = take<double>(data, size);
  p.seed = take<std::uint32_t>(data, size);
  p.lagged = take<std::uint8_t>(data, size) & 1;
  p.row_offset = take<std::int64_t>(data, size);
  p.team_size = take<std::int16_t>(data, size);
  // Shapes from the input, kept small enough to run: out < 16, in < 64.
  const std::int64_t out = take<std::uint8_t>(data, size) % 16;
  const std::int64_t in = take<std::int8_t>(data, size) % 64;
  try {
    TernaryCounter::PackedState<Kokkos::HostSpace>::check_shape(out, in, p.C);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  TernaryCounter::UpdateConstants k;
  try {
    k = TernaryCounter::make_update_constants(p, out, in);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  // What validate() promises about the float32 constants the kernels use.
  if (!std::isfinite(k.lr) || !std::isfinite(k.lr_scale) || !std::isfinite(k.clip) ||
      !(k.eps > 0) || !std::isfinite(k.eps) || (p.lr != 0 && k.lr == 0)) {
    std::abort();
  }
  TernaryCounter::PackedState<Kokkos::HostSpace> state("fuzz", out, in, p.C);
  Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> grad("grad", out, in);
  for (std::int64_t o = 0; o < out; ++o) {
    for (std::int64_t i = 0; i < in; ++i) grad(o, i) = take<float>(data, size);
  }
  try {
    TernaryCounter::update(Kokkos::Serial{}, state, grad, p);
  } catch (const std::invalid_argument&) {
    return 0;  // e.g. a team size above the backend's maximum
  }
  for (std::int64_t o = 0; o < out; ++o) {
    if (!std::isfinite(state.scale(o)) || !std::isfinite(state.v(o)) || !(state.scale(o) > 0)) {
      std::abort();
    }
  }
  return 0;
}
