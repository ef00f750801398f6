// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The source tree the drivers were built from, as the report states it (GitRevision.cmake): the
// revision, and for a tree with uncommitted changes the hash of those changes. A tree the build
// could not check is reported as unknown, never as clean.
#pragma once

#include "TernaryCounterPerf_GitRevision.hpp"

#include <string>

namespace TernaryCounter::Perf {

inline constexpr const char* git_revision = TERNARYCOUNTER_GIT_REVISION;
/// "" for a clean checkout, the SHA-256 of `git diff HEAD` for a dirty one, else "unknown".
inline constexpr const char* git_diff_sha256 = TERNARYCOUNTER_GIT_DIFF_SHA256;

/// One line for the report's header.
inline std::string revision_summary() {
  const std::string revision = git_revision, diff = git_diff_sha256;
  if (revision == "unknown") {
    return "unknown (not built from a git checkout: set TERNARYCOUNTER_GIT_REVISION and "
           "TERNARYCOUNTER_GIT_DIFF_SHA256 at build time to name the tree)";
  }
  if (diff == "unknown") return revision + " (uncommitted changes unknown)";
  if (diff.empty()) return revision + " (clean)";
  return revision + " (uncommitted changes: git diff HEAD sha256 " + diff + ")";
}

}  // namespace TernaryCounter::Perf
