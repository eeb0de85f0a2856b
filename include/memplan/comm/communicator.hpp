// The collectives a sequence-parallel step needs, behind one small interface: NCCL on GPUs
// (NcclComm, nccl.hpp) and in-process threads on the host (HostCommGroup below), so the runtime's
// sharding is written once and tested on CI without a GPU. Like NCCL's, every call is collective:
// each rank of the group makes it, with the same sizes, in the same order.
#pragma once

#include <barrier>
#include <cstddef>
#include <memory>
#include <vector>

#include "memplan/types.hpp"

namespace memplan::comm {

class Communicator {
 public:
  virtual ~Communicator() = default;
  [[nodiscard]] virtual int rank() const noexcept = 0;
  [[nodiscard]] virtual int ranks() const noexcept = 0;
  // Block r of `send` goes to rank r; block r of `recv` comes from rank r; blocks are
  // `bytes_per_rank` long (ranks() blocks each).
  virtual void all_to_all(const void* send, void* recv, std::size_t bytes_per_rank,
                          StreamRef stream) = 0;
  // Rank r's `bytes` land at block r of `recv` on every rank.
  virtual void all_gather(const void* send, void* recv, std::size_t bytes, StreamRef stream) = 0;
};

// N ranks in one process, one thread each, exchanging through host memory at the call (the host
// platform's kernels run at the call too, so no stream ordering is needed). A size that differs
// between ranks is an InvalidArgument on every rank, naming both sizes.
class HostCommGroup {
 public:
  explicit HostCommGroup(int ranks);
  HostCommGroup(const HostCommGroup&) = delete;
  HostCommGroup& operator=(const HostCommGroup&) = delete;

  [[nodiscard]] int ranks() const noexcept { return ranks_; }
  // Rank r's communicator; the group must outlive it.
  [[nodiscard]] std::unique_ptr<Communicator> rank(int r);

 private:
  class Rank;
  struct Slot {
    const void* send = nullptr;
    std::size_t bytes = 0;
  };
  int ranks_;
  std::vector<Slot> slots_;
  std::barrier<> published_;
  std::barrier<> copied_;
};

}  // namespace memplan::comm
