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

void VendorGemm::grad_w(const ConstMatrix& x, const ConstMatrix& grad_out,
                        const Matrix& grad_w) const {
  check_gemm_arguments(x, grad_out, grad_w);
  const int out = int(grad_w.extent(0)), in = int(grad_w.extent(1)), m = int(x.extent(0));
  // cuBLAS is column-major: a row-major [r, c] array is the column-major [c, r] matrix, its
  // transpose. So row-major grad_w [out, in] = grad_out^T x is, column-major,
  //   G (in x out) = X (in x M) * D^T (M x out),
  // with X = x's memory read as in x M (no transpose, ld = x.stride(0)) and D = grad_out's
  // memory read as out x M (transposed, ld = grad_out.stride(0)).
  const float alpha = 1.0f, beta = 0.0f;
  check(cublasSgemm(impl_->handle, CUBLAS_OP_N, CUBLAS_OP_T, in, out, m, &alpha, x.data(),
                    int(x.stride(0)), grad_out.data(), int(grad_out.stride(0)), &beta,
                    grad_w.data(), int(grad_w.stride(0))),
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
