// VendorGemm on CUDA: cublasSgemm in FP32 with the default math mode (no TF32 tensor-op
// rounding), on the stream of the Kokkos execution space so it orders with our kernels.
#include "VendorGemm.hpp"

#include <cublas_v2.h>

#include <string>
#include <type_traits>

namespace TernaryCounter::Perf {

static_assert(std::is_same_v<ExecSpace, Kokkos::Cuda>,
              "VendorGemm_Cuda.cpp serves the Cuda execution space only");

namespace {

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("VendorGemm: ") + what +
                             " failed: " + cublasGetStatusString(status));
  }
}

}  // namespace

struct VendorGemm::Impl {
  ExecSpace space;
  cublasHandle_t handle = nullptr;
};

VendorGemm::VendorGemm(const ExecSpace& space) : impl_(std::make_unique<Impl>(Impl{space})) {
  check(cublasCreate(&impl_->handle), "cublasCreate");
  check(cublasSetStream(impl_->handle, space.cuda_stream()), "cublasSetStream");
  // CUBLAS_DEFAULT_MATH keeps FP32 SGEMM in FP32; CUBLAS_TF32_TENSOR_OP_MATH would not.
  check(cublasSetMathMode(impl_->handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
}

VendorGemm::~VendorGemm() {
  if (impl_ && impl_->handle) cublasDestroy(impl_->handle);
}

void VendorGemm::gemm(bool transpose_a, bool transpose_b, const ConstMatrix& a,
                      const ConstMatrix& b, const Matrix& c) const {
  check_gemm_arguments(transpose_a, transpose_b, a, b, c);
  // cuBLAS is column-major: a row-major [r, c] array is, column-major, its transpose. So the
  // row-major c = op(a) op(b) is the column-major c^T = op(b)^T op(a)^T, where op(b)^T is b's
  // memory as it is (CUBLAS_OP_N) when b is not transposed, and its transpose otherwise.
  const auto op = [](bool transpose) { return transpose ? CUBLAS_OP_T : CUBLAS_OP_N; };
  const int rows = int(c.extent(0)), cols = int(c.extent(1));
  const int depth = int(op_cols(transpose_a, a));
  const float alpha = 1.0f, beta = 0.0f;
  check(cublasSgemm(impl_->handle, op(transpose_b), op(transpose_a), cols, rows, depth, &alpha,
                    b.data(), int(b.stride(0)), a.data(), int(a.stride(0)), &beta, c.data(),
                    int(c.stride(0))),
        "cublasSgemm");
}

std::string VendorGemm::description() const {
  int version = 0;
  check(cublasGetVersion(impl_->handle, &version), "cublasGetVersion");
  cublasMath_t mode{};
  check(cublasGetMathMode(impl_->handle, &mode), "cublasGetMathMode");
  return "cuBLAS " + std::to_string(version) + " cublasSgemm FP32, math mode " +
         (mode == CUBLAS_DEFAULT_MATH ? std::string("CUBLAS_DEFAULT_MATH (no TF32)")
                                      : std::to_string(int(mode)));
}

}  // namespace TernaryCounter::Perf
