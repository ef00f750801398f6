// TERNARYCOUNTER_UNROLL: fully unroll the next loop. Loops over small register arrays must be
// unrolled so that every index is a compile-time constant and the arrays stay in registers.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__clang__)
#define TERNARYCOUNTER_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define TERNARYCOUNTER_UNROLL _Pragma("GCC unroll 16")
#else
#define TERNARYCOUNTER_UNROLL
#endif
