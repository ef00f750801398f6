// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// TERNARYCOUNTER_UNROLL: fully unrolled register-block loops keep their accumulators in
// registers and let the compiler schedule the loads of later iterations early.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__clang__)
#define TERNARYCOUNTER_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define TERNARYCOUNTER_UNROLL _Pragma("GCC unroll 16")
#else
#define TERNARYCOUNTER_UNROLL
#endif
