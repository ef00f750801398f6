// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Kokkos's OpenMP backend keeps its threads' data in a fixed table of
// Kokkos::Impl::OpenMPTraits::MAX_THREAD_COUNT (512) entries and does not check the count: more
// threads write past it and corrupt the heap. The example programs call this before
// Kokkos::initialize: an explicit larger request is an error, a larger default (a host with more
// hardware threads, or OMP_NUM_THREADS) is lowered to the limit, said on stderr.
#pragma once

#include "CommandLine.hpp"

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_OPENMP)
#include <omp.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace TernaryCounter::Examples {

/// The arguments for Kokkos::initialize: `argv` itself, plus --kokkos-num-threads=<limit> when
/// the default thread count exceeds what the OpenMP backend supports. Throws
/// std::invalid_argument when --kokkos-num-threads or KOKKOS_NUM_THREADS is not an integer in
/// [1, that limit].
class KokkosArguments {
 public:
  KokkosArguments(int argc, char** argv, const char* program) {
    for (int a = 0; a < argc; ++a) args_.emplace_back(argv[a]);
    // Kokkos aborts (a signal) on a thread count that does not parse or is below 1: checked
    // here first, so the program can say so and exit.
    int limit = std::numeric_limits<int>::max();
#if defined(KOKKOS_ENABLE_OPENMP)
    limit = Kokkos::Impl::OpenMPTraits::MAX_THREAD_COUNT;
#endif
    const std::string flag = "--kokkos-num-threads";
    const char* env = std::getenv("KOKKOS_NUM_THREADS");
    if (env) CommandLine::parse_integer("KOKKOS_NUM_THREADS", env, 1, limit);
    bool given = env != nullptr;
    for (const std::string& arg : args_) {
      if (arg.rfind(flag, 0) != 0) continue;
      if (arg.size() == flag.size() || arg[flag.size()] != '=') {
        throw std::invalid_argument(arg + ": write " + flag + "=N");
      }
      CommandLine::parse_integer(flag, arg.substr(flag.size() + 1), 1, limit);
      given = true;
    }
#if defined(KOKKOS_ENABLE_OPENMP)
    if (!given && omp_get_max_threads() > limit) {
      std::fprintf(stderr,
                   "%s: %d OpenMP threads by default, more than the %d Kokkos's OpenMP backend "
                   "supports: using %d\n",
                   program, omp_get_max_threads(), limit, limit);
      args_.push_back(flag + "=" + std::to_string(limit));
    }
#else
    (void)program;
    (void)given;
#endif
    for (std::string& arg : args_) pointers_.push_back(arg.data());
    pointers_.push_back(nullptr);
    argc_ = int(args_.size());
  }
  KokkosArguments(const KokkosArguments&) = delete;
  KokkosArguments& operator=(const KokkosArguments&) = delete;

  int& argc() {
    return argc_;
  }
  char** argv() {
    return pointers_.data();
  }

 private:
  std::vector<std::string> args_;
  std::vector<char*> pointers_;
  int argc_ = 0;
};

}  // namespace TernaryCounter::Examples
