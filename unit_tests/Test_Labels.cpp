// Every kernel the library launches and every allocation it makes carries the
// "TernaryCounter::" prefix, so that Kokkos Tools attribute time and memory to it.
#include "Test_Helpers.hpp"

#include <TernaryCounter_Linear.hpp>

#include <string>
#include <vector>

namespace TernaryCounter::Test {
namespace {

std::vector<std::string> kernels, allocations;

void record_kernel(const char* name, std::uint32_t, std::uint64_t*) {
  kernels.push_back(name);
}
void record_allocation(Kokkos::Profiling::SpaceHandle, const char* name, const void*,
                       std::uint64_t) {
  allocations.push_back(name);
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

TEST(Labels, EveryKernelAndAllocationOfTheLibraryIsLabelled) {
  const std::int64_t out = 8, in = 16, M = 4;
  // The test's own inputs, made before recording starts.
  Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> x("x", M, in), grad_out("grad_out", M, out);
  Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> y("y", M, out), grad_x("grad_x", M, in);
  Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> grad_w("grad_w", out, in);
  Kokkos::deep_copy(x, 0.5f);
  Kokkos::deep_copy(grad_out, 0.25f);
  Kokkos::deep_copy(grad_w, 0.125f);
  UpdateParams params;

  kernels.clear();
  allocations.clear();
  Kokkos::Tools::Experimental::set_begin_parallel_for_callback(record_kernel);
  Kokkos::Tools::Experimental::set_begin_parallel_reduce_callback(record_kernel);
  Kokkos::Tools::Experimental::set_begin_parallel_scan_callback(record_kernel);
  Kokkos::Tools::Experimental::set_allocate_data_callback(record_allocation);
  {
    const PackedState<MemSpace> state("layer", out, in, params.C);
    forward(ExecSpace{}, state, x, y);
    backward_input(ExecSpace{}, state, grad_out, grad_x);
    update(ExecSpace{}, state, grad_w, params);
    update_from_io(ExecSpace{}, state, x, grad_out, params);
    ExecSpace{}.fence();
  }
  Kokkos::Tools::Experimental::set_begin_parallel_for_callback(nullptr);
  Kokkos::Tools::Experimental::set_begin_parallel_reduce_callback(nullptr);
  Kokkos::Tools::Experimental::set_begin_parallel_scan_callback(nullptr);
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);

  // Kokkos' own kernels (View fills, deep copies) are named by Kokkos.
  int library_kernels = 0;
  for (const std::string& name : kernels) {
    if (starts_with(name, "Kokkos::")) continue;
    ++library_kernels;
    EXPECT_TRUE(starts_with(name, "TernaryCounter::")) << "unlabelled kernel: " << name;
  }
  EXPECT_GE(library_kernels, 5);  // init, forward, backward_input, row updates, gradient tiles
  // Kokkos' own buffers (team scratch, reduction space) are named by Kokkos.
  int library_allocations = 0;
  for (const std::string& name : allocations) {
    if (starts_with(name, "Kokkos::")) continue;
    ++library_allocations;
    EXPECT_TRUE(starts_with(name, "TernaryCounter::")) << "unlabelled allocation: " << name;
  }
  EXPECT_GE(library_allocations, 4);  // codes, scale, v, the update_from_io workspace
}

}  // namespace
}  // namespace TernaryCounter::Test
