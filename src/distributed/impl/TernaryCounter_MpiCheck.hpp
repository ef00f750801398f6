// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// MPI return codes as exceptions (for communicators whose error handler returns errors; the
// default handler aborts before any code is returned).
#pragma once

#include <mpi.h>

#include <stdexcept>
#include <string>

namespace TernaryCounter::Distributed::Impl {

inline void mpi_check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(std::string("TernaryCounter::Distributed: ") + call + ": " +
                           std::string(text, length));
}

}  // namespace TernaryCounter::Distributed::Impl
