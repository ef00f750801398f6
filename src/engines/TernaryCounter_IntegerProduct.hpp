// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// C = A B of the integer products (SPEC §6) on the engine a dispatcher picked: the hosts' AVX2,
// VNNI or AMX engine, or the portable one (every backend).
#pragma once

#include "engines/TernaryCounter_Capabilities.hpp"
#include "engines/TernaryCounter_HostInt8Gemm.hpp"
#include "engines/TernaryCounter_HostIsa.hpp"
#include "engines/TernaryCounter_IntegerOperands.hpp"
#include "engines/TernaryCounter_QuantizedRows.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace TernaryCounter::Impl {

/// C = A B by the hosts' AVX2, VNNI or AMX engine where `engine` names one, else by the
/// portable engine.
template <class ExecSpace, class B, class Epilogue>
void run_integer_product(const ExecSpace& space, HostInt8Engine engine,
                         const QuantizedRows<typename ExecSpace::memory_space>& a, const B& b,
                         int C, std::int64_t rows, std::int64_t cols, const Epilogue& epilogue,
                         const char* label) {
  using Mem = typename ExecSpace::memory_space;
  const Int8Rows<Mem> rows_a{a.q};
  if constexpr (host_space<ExecSpace>) {
    if (engine != HostInt8Engine::portable) {
      space.fence(label);  // the quantizers' results are read by host threads below
      HostInt8::gemm(engine, space, rows_a, a.sums.data(), b, C, rows, cols, epilogue,
                     (std::string(label) + "::" + host_int8_engine_name(engine)).c_str());
      return;
    }
  }
  PortableIntegerProduct<ExecSpace, B, Epilogue>{rows_a, b,    epilogue,
                                                 rows,   cols, std::int64_t(a.q.extent(1)) / 4}
      .run(space, label);
}

}  // namespace TernaryCounter::Impl
