// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// VendorGemm through Kokkos Kernels: KokkosBlas::gemm on the driver's execution space, which calls
// the BLAS TPL Kokkos Kernels was built with for these View types (cuBLAS on CUDA, rocBLAS on HIP,
// the host BLAS, here OpenBLAS, on host backends) and its own kernels where it has none.
#include "VendorGemm.hpp"

#include <KokkosKernels_config.h>
#include <KokkosBlas3_gemm.hpp>

#if defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS) || defined(KOKKOSKERNELS_ENABLE_TPL_ROCBLAS)
#include <KokkosBlas_tpl_spec.hpp>  // the TPL handles (math mode, version)
#endif

#include <dlfcn.h>

#include <chrono>
#include <climits>
#include <cstdint>

#include <string>
#include <thread>
#include <type_traits>

namespace TernaryCounter::Perf {

namespace {

// The unmanaged Views KokkosBlas::gemm dispatches on: its TPL specializations are declared for
// exactly these types, so the trait below says whether our call reaches the vendor library.
using Device = Kokkos::Device<ExecSpace, MemSpace>;
using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
using GemmA = Kokkos::View<const float**, Kokkos::LayoutRight, Device, Unmanaged>;
using GemmC = Kokkos::View<float**, Kokkos::LayoutRight, Device, Unmanaged>;
constexpr bool kGemmUsesTpl =
    KokkosBlas::Impl::gemm_tpl_spec_avail<ExecSpace, GemmA, GemmA, GemmC>::value;
constexpr bool kHostSpace = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;

// OpenBLAS' own calls, looked up in the running process: Kokkos Kernels only knows that it has
// "a host BLAS", and these are present exactly when that BLAS is OpenBLAS.
template <class Function>
Function openblas_function(const char* name) {
  return reinterpret_cast<Function>(dlsym(RTLD_DEFAULT, name));
}

std::string host_blas_name() {
#if defined(KOKKOSKERNELS_ENABLE_TPL_MKL)
  return "MKL";
#elif defined(KOKKOSKERNELS_ENABLE_TPL_ARMPL)
  return "ArmPL";
#else
  const auto get_config = openblas_function<char* (*)()>("openblas_get_config");
  const auto get_threads = openblas_function<int (*)()>("openblas_get_num_threads");
  if (get_config == nullptr) return "host BLAS";
  // The configuration string starts with "OpenBLAS <version>" (0.3.x).
  std::string name = get_config();
  if (name.rfind("OpenBLAS", 0) != 0) name = "OpenBLAS " + name;
  if (get_threads != nullptr) name += ", " + std::to_string(get_threads()) + " threads";
  return name;
#endif
}

std::string tpl_name() {
#if defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS) && defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda>) {
    int major = 0, minor = 0, patch = 0;
    cublasGetProperty(MAJOR_VERSION, &major);
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    cublasMath_t mode{};
    cublasGetMathMode(KokkosBlas::Impl::CudaBlasSingleton::singleton().handle, &mode);
    return "cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." +
           std::to_string(patch) + ", cublasSgemm FP32, math mode " +
           (mode == CUBLAS_DEFAULT_MATH ? std::string("CUBLAS_DEFAULT_MATH (no TF32)")
                                        : std::to_string(int(mode)));
  }
#endif
#if defined(KOKKOSKERNELS_ENABLE_TPL_ROCBLAS) && defined(KOKKOS_ENABLE_HIP)
  if constexpr (std::is_same_v<ExecSpace, Kokkos::HIP>) {
    std::size_t size = 0;
    rocblas_get_version_string_size(&size);
    std::string version(size, '\0');
    rocblas_get_version_string(version.data(), size);
    version.resize(version.find('\0') == std::string::npos ? size : version.find('\0'));
    return "rocBLAS " + version + ", rocblas_sgemm FP32";
  }
#endif
  if constexpr (kHostSpace) return host_blas_name();
  return "unknown";
}

}  // namespace

struct VendorGemm::Impl {
  ExecSpace space;
  Matrix transposed;  ///< a^T for the calls below that must not pass transpose_a (grown on use)
};

namespace {

// Kokkos Kernels (2fc2af19f) picks its dot-based kernel instead of the TPL when op(a) is
// transposed, op(b) is not and M * N, computed in int, is below 100: a c of 2^31 elements or
// more overflows into that test (c = 131072 x 32768 ran into a division by zero on the host).
bool dot_based_overflow(bool transpose_a, bool transpose_b, const Matrix& c) {
  return transpose_a && !transpose_b && double(c.extent(0)) * double(c.extent(1)) > INT32_MAX;
}

}  // namespace

VendorGemm::VendorGemm(const ExecSpace& space) : impl_(std::make_unique<Impl>(Impl{space})) {
  if constexpr (kHostSpace) {
    // Both sides of the comparison on the same cores: OpenBLAS as many threads as the space.
    if (const auto set_threads = openblas_function<void (*)(int)>("openblas_set_num_threads")) {
      set_threads(space.concurrency());
    }
  }
}

VendorGemm::~VendorGemm() = default;

void VendorGemm::settle() const {
  if constexpr (kHostSpace) std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

void VendorGemm::gemm(bool transpose_a, bool transpose_b, const ConstMatrix& a,
                      const ConstMatrix& b, const Matrix& c) const {
  check_gemm_arguments(transpose_a, transpose_b, a, b, c);
  if constexpr (kHostSpace) {
    // A host BLAS runs outside Kokkos: the inputs may still be written by kernels of the space.
    impl_->space.fence("TernaryCounter::Perf::VendorGemm::before_gemm");
  }
  if (dot_based_overflow(transpose_a, transpose_b, c)) {
    // Transpose a first (a copy of M x out floats, tiny next to such a c) and multiply
    // untransposed.
    Matrix& t = impl_->transposed;
    if (t.extent(0) != a.extent(1) || t.extent(1) != a.extent(0)) {
      t = Matrix(Kokkos::view_alloc(Kokkos::WithoutInitializing, "TernaryCounter::Perf::a_t"),
                 a.extent(1), a.extent(0));
    }
    const Matrix at = t;
    Kokkos::parallel_for(
        "TernaryCounter::Perf::transpose",
        Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>(impl_->space, {0, 0},
                                                          {a.extent(0), a.extent(1)}),
        KOKKOS_LAMBDA(std::int64_t r, std::int64_t col) { at(col, r) = a(r, col); });
    KokkosBlas::gemm(impl_->space, "N", transpose_b ? "T" : "N", 1.0f, ConstMatrix(at), b, 0.0f, c);
    return;
  }
  KokkosBlas::gemm(impl_->space, transpose_a ? "T" : "N", transpose_b ? "T" : "N", 1.0f, a, b, 0.0f,
                   c);
}

std::string VendorGemm::description() const {
  if (!kGemmUsesTpl) {
    return "KokkosBlas::gemm (no TPL for " + std::string(ExecSpace::name()) +
           ": Kokkos Kernels' own FP32 kernels)";
  }
  return "KokkosBlas::gemm (TPL: " + tpl_name() + ")";
}

}  // namespace TernaryCounter::Perf
