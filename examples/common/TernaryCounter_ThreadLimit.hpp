// Kokkos's OpenMP backend keeps its threads' data in a fixed table of
// Kokkos::Impl::OpenMPTraits::MAX_THREAD_COUNT (512) entries and does not check the count: more
// threads write past it and corrupt the heap. The example programs call this before
// Kokkos::initialize: an explicit larger request is an error, a larger default (a host with more
// hardware threads, or OMP_NUM_THREADS) is lowered to the limit, said on stderr.
#pragma once

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_OPENMP)
#include <omp.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace TernaryCounter::Examples {

/// The arguments for Kokkos::initialize: `argv` itself, plus --kokkos-num-threads=<limit> when
/// the default thread count exceeds what the OpenMP backend supports. Throws
/// std::invalid_argument when --kokkos-num-threads or KOKKOS_NUM_THREADS asks for more.
class KokkosArguments {
 public:
  KokkosArguments(int argc, char** argv, const char* program) {
    for (int a = 0; a < argc; ++a) args_.emplace_back(argv[a]);
#if defined(KOKKOS_ENABLE_OPENMP)
    constexpr int limit = Kokkos::Impl::OpenMPTraits::MAX_THREAD_COUNT;
    const std::string flag = "--kokkos-num-threads=";
    const char* env = std::getenv("KOKKOS_NUM_THREADS");
    std::string asked = env ? std::string(env) : "";
    std::string source = "KOKKOS_NUM_THREADS";
    for (const std::string& arg : args_) {
      if (arg.rfind(flag, 0) == 0) {
        asked = arg.substr(flag.size());
        source = "--kokkos-num-threads";
      }
    }
    if (!asked.empty()) {
      // Kokkos itself refuses what does not parse; only a count above the limit matters here.
      if (asked.size() > 9 || std::strtol(asked.c_str(), nullptr, 10) > limit) {
        throw std::invalid_argument(source + "=" + asked +
                                    ": Kokkos's OpenMP backend supports at most " +
                                    std::to_string(limit) + " threads");
      }
    } else if (omp_get_max_threads() > limit) {
      std::fprintf(stderr,
                   "%s: %d OpenMP threads by default, more than the %d Kokkos's OpenMP backend "
                   "supports: using %d\n",
                   program, omp_get_max_threads(), limit, limit);
      args_.push_back(flag + std::to_string(limit));
    }
#else
    (void)program;
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
