// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What every test file includes: GoogleTest, the library and the backend under test.
#pragma once

#include <gtest/gtest.h>

#include <TernaryCounter.hpp>

#include TERNARYCOUNTER_TEST_BACKEND_HEADER

namespace TernaryCounter::Test {

using ExecSpace = TEST_EXECSPACE;
using MemSpace = typename ExecSpace::memory_space;

}  // namespace TernaryCounter::Test
