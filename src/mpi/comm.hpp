// The collectives a distributed kernel needs, over one MPI communicator (MPI stays out of the
// kernels' headers: only comm.cpp includes mpi.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace pmlab::dist {

// One process = one rank. The kernels' operands point to the process's Comm (world()).
class Comm {
 public:
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }

  // Neighbours' boundary rows: sends `first` (this rank's first row) up and `last` down,
  // receives the row above into `above` and the row below into `below` (left as they are at
  // the grid's edges). Every rank calls it.
  void exchange_rows(const double* first, const double* last, double* above, double* below,
                     std::size_t n) const;
  // All ranks' `mine` concatenated in rank order into `all`; `counts[r]` is rank r's length.
  void allgather(std::span<const double> mine, std::span<const std::size_t> counts,
                 std::span<double> all) const;
  // The sum of every rank's block partials in rank (so global block) order, from 0.0: the
  // single-process iterative::ordered_sum. `step` travels with the partials, and a rank whose
  // peers are at another step throws (std::logic_error): ranks out of step would combine
  // different iterations' data, so a broken restart rule stops here instead of finishing wrong.
  [[nodiscard]] double ordered_block_sum(std::span<const double> mine,
                                         std::span<const std::size_t> blocks_of,
                                         std::uint64_t step) const;
  // Element-wise minimum over all ranks, in place (also the maximum: negate).
  void allreduce_min(std::span<std::int64_t> v) const;
  [[nodiscard]] std::int64_t max_of(std::int64_t v) const;
  [[nodiscard]] std::int64_t min_of(std::int64_t v) const;
  [[nodiscard]] std::uint64_t sum_of(std::uint64_t v) const;
  void barrier() const;
  // A barrier that also checks every rank is at `step` (throws std::logic_error otherwise).
  void step_barrier(std::uint64_t step) const;
  [[nodiscard]] std::uint64_t broadcast(std::uint64_t v) const;  // rank 0's value
  // Rank 0 receives every rank's bytes in rank order (others get an empty vector).
  [[nodiscard]] std::vector<double> gather(std::span<const double> mine,
                                           std::span<const std::size_t> counts) const;

  static void init(int* argc, char*** argv);
  static void finalize();

 private:
  int rank_ = 0, size_ = 1;
  friend Comm& world();
};

// This process's communicator (MPI_COMM_WORLD once init ran).
Comm& world();

// Rank r's share of `blocks` blocks: [begin, end), as even as possible, earlier ranks larger.
struct Share {
  std::size_t begin = 0, end = 0;
};
[[nodiscard]] inline Share share_of(std::size_t blocks, int ranks, int r) {
  const auto p = static_cast<std::size_t>(ranks), q = static_cast<std::size_t>(r);
  return {blocks * q / p, blocks * (q + 1) / p};
}

}  // namespace pmlab::dist
