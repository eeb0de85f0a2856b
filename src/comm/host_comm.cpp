// In-process collectives: every rank publishes its send buffer, waits for the others, copies what
// is its own from each of them, and waits again so that no rank reuses a buffer another is still
// reading.
#include <fmt/format.h>

#include <cstring>

#include "memplan/comm/communicator.hpp"
#include "memplan/error.hpp"

namespace memplan::comm {

class HostCommGroup::Rank final : public Communicator {
 public:
  Rank(HostCommGroup& group, int rank) : group_(group), rank_(rank) {}
  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] int ranks() const noexcept override { return group_.ranks_; }

  void all_to_all(const void* send, void* recv, std::size_t bytes_per_rank, StreamRef) override {
    exchange(send, bytes_per_rank, "all_to_all", [&](int from, const std::byte* their_send) {
      std::memcpy(static_cast<std::byte*>(recv) + static_cast<std::size_t>(from) * bytes_per_rank,
                  their_send + static_cast<std::size_t>(rank_) * bytes_per_rank, bytes_per_rank);
    });
  }

  void all_gather(const void* send, void* recv, std::size_t bytes, StreamRef) override {
    exchange(send, bytes, "all_gather", [&](int from, const std::byte* their_send) {
      std::memcpy(static_cast<std::byte*>(recv) + static_cast<std::size_t>(from) * bytes,
                  their_send, bytes);
    });
  }

 private:
  template <class Copy>
  void exchange(const void* send, std::size_t bytes, const char* call, Copy&& copy) {
    group_.slots_[rank_] = {send, bytes};
    group_.published_.arrive_and_wait();
    std::string mismatch;
    for (int r = 0; r < group_.ranks_ && mismatch.empty(); ++r) {
      if (group_.slots_[r].bytes != bytes) {
        mismatch = fmt::format(
            "{}: rank {} passes {} bytes, rank {} passes {}: a collective's "
            "sizes must agree on every rank",
            call, rank_, bytes, r, group_.slots_[r].bytes);
      }
    }
    if (mismatch.empty()) {
      for (int r = 0; r < group_.ranks_; ++r) {
        copy(r, static_cast<const std::byte*>(group_.slots_[r].send));
      }
    }
    group_.copied_.arrive_and_wait();  // every rank waits here, so all of them throw alike
    if (!mismatch.empty()) throw InvalidArgument(mismatch);
  }

  HostCommGroup& group_;
  int rank_;
};

HostCommGroup::HostCommGroup(int ranks)
    : ranks_(ranks > 0 ? ranks
                       : throw InvalidArgument(
                             fmt::format("HostCommGroup: {} ranks (need at least 1)", ranks))),
      slots_(static_cast<std::size_t>(ranks)),
      published_(ranks),
      copied_(ranks) {}

std::unique_ptr<Communicator> HostCommGroup::rank(int r) {
  if (r < 0 || r >= ranks_) {
    throw InvalidArgument(
        fmt::format("HostCommGroup::rank({}): the group has {} ranks", r, ranks_));
  }
  return std::make_unique<Rank>(*this, r);
}

}  // namespace memplan::comm
