// Branch and bound over canonical placements, for one capacity (the MiniMalloc idea, ASPLOS 2023).
//
// Any plan can be settled: let every buffer fall until it rests on 0, on an obstacle or on a
// buffer alive with it. Sorted by offset, a settled plan places each buffer at its lowest offset
// above the buffers placed before it. So the search only picks *which* buffer comes next, in
// non-decreasing offset order, and puts it at that lowest offset. Pruning on top:
//   - section inference: in every cross section, the unplaced buffers must stack between the
//     section's floor (the placed tops, the lowest offsets still open, the current offset) and
//     the capacity;
//   - dominance: placing a buffer at or above the top that another unplaced buffer could reach
//     leaves a gap that buffer would fall into, so that branch is a copy of another one;
//   - decomposition: when no unplaced buffer crosses a section boundary, the two sides are
//     independent problems; each is solved alone, and a failure of one fails the node without
//     retrying the others.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "search_model.hpp"

namespace memplan::plan::detail {

enum class SearchOutcome { Found, Infeasible, Aborted };

class CanonicalSearch {
 public:
  using Clock = std::chrono::steady_clock;

  explicit CanonicalSearch(const SearchModel& model);

  // Looks for offsets with every buffer's top at most `capacity`. `rank` breaks ties between
  // buffers that could go at the same offset (lower first) and fixes the branching order.
  // Aborted when `node_limit` nodes were spent or `deadline` passed.
  SearchOutcome run(Bytes capacity, std::span<const int> rank, std::int64_t node_limit,
                    Clock::time_point deadline);

  // After Found: an offset per model buffer.
  [[nodiscard]] std::span<const Bytes> offsets() const { return offset_; }
  [[nodiscard]] std::int64_t nodes() const { return nodes_; }
  [[nodiscard]] bool deadline_passed() const { return deadline_passed_; }
  // Per section: how often the last run pruned a placement because this section overflowed.
  [[nodiscard]] std::span<const std::int64_t> section_failures() const { return failures_; }

 private:
  // A set of model buffers (a slice of pool_) and the sections they live in.
  struct Part {
    std::size_t begin = 0;
    std::size_t end = 0;
    int first_section = 0;
    int last_section = 0;
  };
  // An undo record: a state slot and its value before a change.
  struct Change {
    Bytes* slot;
    Bytes old;
  };

  SearchOutcome search(Part part, Bytes last_offset, int last_rank);
  SearchOutcome search_parts(Part part, Bytes last_offset, int last_rank);
  // Places v and updates what depends on it; true when a section boundary lost its last
  // crossing buffer. Leaves in [changed_first_, changed_last_) the sections whose floor or
  // remaining size may have changed.
  bool place(int v, Bytes at);
  // The sections place() changed still hold their unplaced buffers below the capacity. (The
  // others did not change, and the caller checks the offset against the heaviest of them.)
  [[nodiscard]] bool changed_sections_fit();
  [[nodiscard]] bool sections_fit(const Part& part, Bytes current_offset) const;
  [[nodiscard]] Bytes settle(int v, Bytes from) const;
  void set(Bytes& slot, Bytes value) {
    trail_.push_back({&slot, slot});
    slot = value;
  }
  void undo(std::size_t mark);
  bool out_of_budget();

  const SearchModel& model_;
  Bytes capacity_ = 0;
  std::span<const int> rank_;
  std::int64_t node_limit_ = 0;
  Clock::time_point deadline_;
  std::int64_t nodes_ = 0;
  bool deadline_passed_ = false;

  std::vector<Bytes> offset_;     // per buffer; kUnplaced until placed
  std::vector<Bytes> lowest_;     // per buffer: lowest offset above its placed neighbours
  std::vector<Bytes> floor_;      // per section: no unplaced member can start below it
  std::vector<Bytes> remaining_;  // per section: total size of its unplaced members
  std::vector<Bytes> crossings_;  // per boundary: unplaced buffers crossing it
  std::vector<Change> trail_;
  std::vector<int> pool_;        // stack of Part member lists
  std::vector<Part> parts_;      // stack of parts being solved one after another
  std::vector<int> candidates_;  // stack of each node's branching choices
  int changed_first_ = 0;        // sections the last placement changed: a contiguous run
  int changed_last_ = 0;
  std::vector<int> segment_of_;         // scratch: section -> segment when splitting
  std::vector<std::int64_t> failures_;  // per section: prunes it caused in this run
  std::vector<int> witness_;            // per section: a member last found low enough (a hint)
};

}  // namespace memplan::plan::detail
