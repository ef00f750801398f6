// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TernaryCounter_SettingsAgreement.hpp"

#include "distributed/impl/TernaryCounter_Agreement.hpp"
#include "distributed/impl/TernaryCounter_MpiCheck.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>

namespace TernaryCounter::Distributed {

namespace {

// Settings as one text: each name and value preceded by its length (any bytes allowed).
std::string encode(const Settings& settings) {
  std::string text;
  for (const auto& [name, value] : settings) {
    for (const std::string* part : {&name, &value}) {
      text += std::to_string(part->size()) + ":" + *part;
    }
  }
  return text;
}

Settings decode(const std::string& text) {
  Settings settings;
  std::size_t at = 0;
  const auto part = [&]() {
    const std::size_t colon = text.find(':', at);
    const std::size_t size = std::stoull(text.substr(at, colon - at));
    std::string value = text.substr(colon + 1, size);
    at = colon + 1 + size;
    return value;
  };
  while (at < text.size()) {
    std::string name = part();
    settings.emplace_back(std::move(name), part());
  }
  return settings;
}

}  // namespace

void agree_on_settings(const Communicator& comm, const std::string& where,
                       const std::string& local_error, const Settings& settings) {
  const std::string error = Impl::first_error(comm, local_error);
  if (!error.empty()) throw std::invalid_argument(where + ": " + error);
  const int n = comm.size();
  const std::string mine = encode(settings);
  const std::int64_t length = std::int64_t(mine.size());
  std::vector<std::int64_t> lengths(std::size_t(n), 0);
  Impl::mpi_check(
      MPI_Allgather(&length, 1, MPI_INT64_T, lengths.data(), 1, MPI_INT64_T, comm.mpi()),
      "MPI_Allgather");
  std::vector<int> counts(static_cast<std::size_t>(n)), offsets(static_cast<std::size_t>(n));
  std::int64_t total = 0;
  for (int r = 0; r < n; ++r) {
    offsets[std::size_t(r)] = int(total);
    counts[std::size_t(r)] = int(lengths[std::size_t(r)]);
    total += lengths[std::size_t(r)];
  }
  // MPI counts are int: settings are short texts, so more is a program error (the same on
  // every rank, since every rank knows every length).
  if (total > (std::int64_t(1) << 30)) {
    throw std::invalid_argument(where + ": the settings are " + std::to_string(total) +
                                " bytes, too many to compare");
  }
  std::string all(std::size_t(total), '\0');
  Impl::mpi_check(MPI_Allgatherv(mine.data(), int(length), MPI_CHAR, all.data(), counts.data(),
                                 offsets.data(), MPI_CHAR, comm.mpi()),
                  "MPI_Allgatherv");
  std::vector<Settings> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.push_back(decode(
        all.substr(std::size_t(offsets[std::size_t(r)]), std::size_t(counts[std::size_t(r)]))));
  }
  // Names in rank 0's order, then those only other ranks have.
  std::vector<std::string> names;
  std::set<std::string> seen;
  std::vector<std::map<std::string, std::string>> values(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    for (const auto& [name, value] : ranks[std::size_t(r)]) {
      values[std::size_t(r)].emplace(name, value);
      if (seen.insert(name).second) names.push_back(name);
    }
  }
  const auto show = [&](int r, const std::string& name) {
    const auto it = values[std::size_t(r)].find(name);
    return it == values[std::size_t(r)].end() ? std::string("(not set)") : "'" + it->second + "'";
  };
  for (const std::string& name : names) {
    for (int r = 1; r < n; ++r) {
      if (show(r, name) != show(0, name)) {
        throw std::invalid_argument(where + ": the ranks disagree on " + name + ": rank 0 has " +
                                    show(0, name) + " but rank " + std::to_string(r) + " has " +
                                    show(r, name));
      }
    }
  }
}

}  // namespace TernaryCounter::Distributed
