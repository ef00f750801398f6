// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Collective checks before a collective update or checkpoint: every rank learns every rank's
// verdict, so all of them raise the same error (or none does) and no rank waits for a partner
// that has already given up.
#pragma once

#include "TernaryCounter_Communicator.hpp"
#include "TernaryCounter_DistributedUpdate.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace TernaryCounter::Distributed::Impl {

// Field, the values compared, is declared in TernaryCounter_DistributedUpdate.hpp: the public
// update_from_io_agreeing takes a list of them.

/// Collective. "" when no rank has a local error; otherwise, on every rank, "rank R: <its
/// error>" for the lowest rank R that has one (plus how many others had one).
std::string first_error(const Communicator& comm, const std::string& local_error);

/// Collective. Every rank's `per_rank` value (e.g. its local sample count), after checking that
/// no rank has a local error and that all ranks hold the same `fields` (the same list of names on
/// every rank). Otherwise throws std::invalid_argument with the same text on every rank:
/// "<where>: rank R: <error>" or "<where>: the ranks disagree on <name>: rank 0 has A but rank R
/// has B".
std::vector<std::int64_t> agree(const Communicator& comm, const std::string& where,
                                const std::string& local_error, const std::vector<Field>& fields,
                                std::int64_t per_rank);

}  // namespace TernaryCounter::Distributed::Impl
