// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "distributed/impl/TernaryCounter_Agreement.hpp"

#include "distributed/impl/TernaryCounter_MpiCheck.hpp"

#include <bit>
#include <sstream>
#include <stdexcept>

namespace TernaryCounter::Distributed::Impl {

namespace {

std::string show(const Field& f, std::int64_t bits) {
  std::ostringstream s;
  if (f.is_double) {
    s.precision(17);
    s << std::bit_cast<double>(bits);
  } else {
    s << bits;
  }
  return s.str();
}

}  // namespace

Field Field::real(const char* name, double value) {
  return {name, std::bit_cast<std::int64_t>(value), true};
}

std::string first_error(const Communicator& comm, const std::string& local_error) {
  const int n = comm.size();
  const int length = int(local_error.size());
  std::vector<int> lengths(n), offsets(n);
  mpi_check(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm.mpi()),
            "MPI_Allgather");
  int total = 0, first = -1, count = 0;
  for (int r = 0; r < n; ++r) {
    offsets[r] = total;
    total += lengths[r];
    if (lengths[r] > 0) {
      if (first < 0) first = r;
      ++count;
    }
  }
  if (first < 0) return "";
  std::string texts(std::size_t(total), '\0');
  mpi_check(MPI_Allgatherv(local_error.data(), length, MPI_CHAR, texts.data(), lengths.data(),
                           offsets.data(), MPI_CHAR, comm.mpi()),
            "MPI_Allgatherv");
  std::string message = "rank " + std::to_string(first) + ": " +
                        texts.substr(std::size_t(offsets[first]), std::size_t(lengths[first]));
  if (count > 1) {
    message += " (and errors on " + std::to_string(count - 1) + " other rank" +
               (count > 2 ? "s" : "") + ")";
  }
  return message;
}

std::vector<std::int64_t> agree(const Communicator& comm, const std::string& where,
                                const std::string& local_error, const std::vector<Field>& fields,
                                std::int64_t per_rank) {
  const std::string error = first_error(comm, local_error);
  if (!error.empty()) throw std::invalid_argument(where + ": " + error);
  const int n = comm.size();
  const std::size_t width = fields.size() + 1;
  std::vector<std::int64_t> mine(width), all(width * std::size_t(n));
  for (std::size_t k = 0; k < fields.size(); ++k) mine[k] = fields[k].bits;
  mine.back() = per_rank;
  mpi_check(MPI_Allgather(mine.data(), int(width), MPI_INT64_T, all.data(), int(width), MPI_INT64_T,
                          comm.mpi()),
            "MPI_Allgather");
  for (std::size_t k = 0; k < fields.size(); ++k) {
    for (int r = 1; r < n; ++r) {
      const std::int64_t reference = all[k], value = all[std::size_t(r) * width + k];
      if (value != reference) {
        throw std::invalid_argument(where + ": the ranks disagree on " + fields[k].name +
                                    ": rank 0 has " + show(fields[k], reference) + " but rank " +
                                    std::to_string(r) + " has " + show(fields[k], value));
      }
    }
  }
  std::vector<std::int64_t> values(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) values[std::size_t(r)] = all[std::size_t(r) * width + fields.size()];
  return values;
}

}  // namespace TernaryCounter::Distributed::Impl
