// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "engines/vendor/TernaryCounter_CublasInt8.hpp"

#include <Kokkos_Profiling_ScopedRegion.hpp>

#include <cublas_v2.h>

#include <climits>
#include <map>
#include <mutex>

namespace TernaryCounter::Impl {

namespace {

/// One cuBLAS handle per device, made on first use and destroyed when Kokkos finalizes (after
/// that the CUDA context they belong to is gone). The mutex also covers each call's stream.
struct Handles {
  std::mutex mutex;
  std::map<int, cublasHandle_t> by_device;
  bool hooked = false;
};

Handles& handles() {
  static Handles* h = new Handles;  // never destroyed: the finalize hook empties it
  return *h;
}

cublasHandle_t handle_for(int device) {
  Handles& h = handles();
  const auto found = h.by_device.find(device);
  if (found != h.by_device.end()) return found->second;
  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return nullptr;
  h.by_device.emplace(device, handle);
  if (!h.hooked) {
    h.hooked = true;
    Kokkos::push_finalize_hook([] {
      Handles& all = handles();
      const std::lock_guard<std::mutex> lock(all.mutex);
      for (auto& [device, each] : all.by_device) cublasDestroy(each);
      all.by_device.clear();
      all.hooked = false;
    });
  }
  return handle;
}

bool fits_int(std::int64_t v) {
  return v >= 0 && v <= INT_MAX;
}

}  // namespace

bool cublas_int8_gemm(const Kokkos::Cuda& space, std::int64_t rows, std::int64_t cols,
                      std::int64_t depth, const std::int8_t* a, std::int64_t lda,
                      const std::int8_t* b, std::int64_t ldb, std::int32_t* c, std::int64_t ldc) {
  if (!fits_int(rows) || !fits_int(cols) || !fits_int(depth) || !fits_int(lda) || !fits_int(ldb) ||
      !fits_int(ldc)) {
    return false;
  }
  if (rows == 0 || cols == 0) return true;
  // A region of its own, so that Kokkos Tools count the vendor's launches and time them apart
  // from the kernels around it (ternary-counter-perf --kernels).
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::vendor_int8_gemm");
  Handles& h = handles();
  const std::lock_guard<std::mutex> lock(h.mutex);
  const cublasHandle_t handle = handle_for(space.cuda_device());
  if (handle == nullptr || cublasSetStream(handle, space.cuda_stream()) != CUBLAS_STATUS_SUCCESS) {
    return false;
  }
  // Column-major, c^T [cols, rows] = (b as [depth, cols])^T (a as [depth, rows]): the "TN" form
  // that cuBLAS' integer tensor-core kernels take.
  const std::int32_t one = 1, zero = 0;
  return cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, int(cols), int(rows), int(depth), &one, b,
                      CUDA_R_8I, int(ldb), a, CUDA_R_8I, int(lda), &zero, c, CUDA_R_32I, int(ldc),
                      CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
}

}  // namespace TernaryCounter::Impl
