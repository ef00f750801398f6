// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Agreement on a program's settings before any collective work: a rank whose options, data or
// checkpoint differ from the others' would leave the collective sequence (a hang) or train on
// other numbers (a wrong result), so every rank compares its settings with every other's once,
// at start-up, and all of them stop with the same error when they differ.
#pragma once

#include "TernaryCounter_Communicator.hpp"

#include <string>
#include <utility>
#include <vector>

namespace TernaryCounter::Distributed {

/// Named settings, each a text every rank must hold equally (e.g. "--batch" -> "256",
/// "data train-images" -> "47040016 bytes, CRC-32C 1a2b3c4d").
using Settings = std::vector<std::pair<std::string, std::string>>;

/// Collective. Returns when no rank has a local error (a non-empty `local_error`, e.g. an option
/// that does not parse) and every rank holds the same settings (names and values). Otherwise
/// throws std::invalid_argument with the same text on every rank: "<where>: rank R: <error>" for
/// the lowest rank with an error, or "<where>: the ranks disagree on <name>: rank 0 has 'A' but
/// rank R has 'B'" for the first differing name (in rank 0's order; a name one rank lacks reads
/// as "(not set)").
void agree_on_settings(const Communicator& comm, const std::string& where,
                       const std::string& local_error, const Settings& settings);

}  // namespace TernaryCounter::Distributed
