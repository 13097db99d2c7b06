// Comm over MPI_COMM_WORLD (Open MPI): the only file of pmlab-mpi that includes mpi.h.
#include "comm.hpp"

#include <mpi.h>

#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace pmlab::dist {

namespace {
std::vector<int> ints(std::span<const std::size_t> counts, std::vector<int>* displs) {
  std::vector<int> out;
  int at = 0;
  for (const std::size_t c : counts) {
    out.push_back(static_cast<int>(c));
    if (displs != nullptr) displs->push_back(at);
    at += static_cast<int>(c);
  }
  return out;
}
}  // namespace

Comm& world() {
  static Comm c;
  return c;
}

void Comm::init(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  Comm& c = world();
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &c.size_);
}

void Comm::finalize() {
  MPI_Finalize();
}

void Comm::exchange_rows(const double* first, const double* last, double* above, double* below,
                         std::size_t n) const {
  const int up = rank_ > 0 ? rank_ - 1 : MPI_PROC_NULL;
  const int down = rank_ + 1 < size_ ? rank_ + 1 : MPI_PROC_NULL;
  const int count = static_cast<int>(n);
  // Tag 1: rows travelling down; tag 2: rows travelling up.
  MPI_Sendrecv(last, count, MPI_DOUBLE, down, 1, above, count, MPI_DOUBLE, up, 1, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  MPI_Sendrecv(first, count, MPI_DOUBLE, up, 2, below, count, MPI_DOUBLE, down, 2, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
}

void Comm::allgather(std::span<const double> mine, std::span<const std::size_t> counts,
                     std::span<double> all) const {
  std::vector<int> displs;
  const std::vector<int> c = ints(counts, &displs);
  MPI_Allgatherv(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(), c.data(),
                 displs.data(), MPI_DOUBLE, MPI_COMM_WORLD);
}

double Comm::ordered_block_sum(std::span<const double> mine, std::span<const std::size_t> blocks_of,
                               std::uint64_t step) const {
  std::vector<double> out(mine.begin(), mine.end());
  out.push_back(static_cast<double>(step));
  std::vector<std::size_t> counts(blocks_of.begin(), blocks_of.end());
  std::size_t total = 0;
  for (auto& c : counts) total += ++c;
  std::vector<double> all(total);
  allgather(out, counts, all);
  double s = 0.0;
  std::size_t at = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    for (std::size_t k = 0; k + 1 < counts[r]; ++k) s += all[at + k];
    at += counts[r];
    if (all[at - 1] != static_cast<double>(step))
      throw std::logic_error(fmt::format(
          "ranks out of step: rank {} is at step {}, rank {} at step {} (the restart did not "
          "agree on one resume point)",
          rank_, step, r, all[at - 1]));
  }
  return s;
}

void Comm::allreduce_min(std::span<std::int64_t> v) const {
  MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_INT64_T, MPI_MIN,
                MPI_COMM_WORLD);
}

std::int64_t Comm::max_of(std::int64_t v) const {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  return v;
}

std::int64_t Comm::min_of(std::int64_t v) const {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  return v;
}

std::uint64_t Comm::sum_of(std::uint64_t v) const {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return v;
}

void Comm::step_barrier(std::uint64_t step) const {
  const std::vector<std::size_t> none(static_cast<std::size_t>(size_), 0);
  (void)ordered_block_sum({}, none, step);
}

void Comm::barrier() const {
  MPI_Barrier(MPI_COMM_WORLD);
}

std::uint64_t Comm::broadcast(std::uint64_t v) const {
  MPI_Bcast(&v, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return v;
}

std::vector<double> Comm::gather(std::span<const double> mine,
                                 std::span<const std::size_t> counts) const {
  std::vector<int> displs;
  const std::vector<int> c = ints(counts, &displs);
  std::vector<double> all;
  if (rank_ == 0) all.resize(static_cast<std::size_t>(displs.back() + c.back()));
  MPI_Gatherv(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(), c.data(),
              displs.data(), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return all;
}

}  // namespace pmlab::dist
