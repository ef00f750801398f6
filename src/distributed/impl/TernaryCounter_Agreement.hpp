// Collective checks before a collective update or checkpoint: every rank learns every rank's
// verdict, so all of them raise the same error (or none does) and no rank waits for a partner
// that has already given up.
#pragma once

#include "TernaryCounter_Communicator.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace TernaryCounter::Distributed::Impl {

/// One value every rank must hold equally (doubles compared bit for bit).
struct Field {
  const char* name;
  std::int64_t bits;
  bool is_double = false;

  static Field integer(const char* name, std::int64_t value) { return {name, value, false}; }
  static Field real(const char* name, double value);
};

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
