// A recording step's bytes: the best-fit free ranges of the window around everything live (the
// replayed prefix, the rogues), and where each live buffer of the step lies. A step records from
// its first run or from a break to its end; what it learns (the tree's nodes) is the cursor's,
// where the bytes go is this. At the end of the step the record is planned (plan_branch) with
// first_recorded() and the buffers freed late.
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "free_ranges.hpp"
#include "memplan/tree/allocation_tree.hpp"

namespace memplan {

// A live buffer of the running step while it records: where its bytes are.
struct Instance {
  tree::NodeId node = tree::kNoNode;  // kNoNode in Dynamic mode
  Bytes offset = 0;                   // in the window
  Bytes size = 0;
};

class Recording {
 public:
  // Begins over `capacity` bytes of window, all free; nodes from `first_recorded` on are the
  // record (forgotten if the step aborts).
  void start(Bytes capacity, tree::NodeId first_recorded);
  // Between steps again.
  void finish() noexcept;

  // A live buffer of the replayed prefix: its bytes are taken, and its free is recorded.
  void hold(void* p, const Instance& instance);
  // Bytes something else holds (a rogue): taken for the whole recording.
  void hold_range(Bytes offset, Bytes size) { free_ranges_->occupy(offset, size); }
  // The same where part of the range may be held already.
  void hold_free_parts(Bytes offset, Bytes size) { free_ranges_->occupy_free_parts(offset, size); }
  // The best-fitting free offset for `size` bytes at `alignment` from the window at `window`,
  // taken; nullopt when none.
  [[nodiscard]] std::optional<Bytes> place(Bytes size, Bytes alignment, Bytes window) {
    return free_ranges_->allocate(size, alignment, window);
  }
  // Gives back what place() took when the buffer could not be served after all.
  void unplace(Bytes offset, Bytes size) { free_ranges_->release(offset, size); }
  // The buffer at `offset` is live in the step as `p`.
  void add(void* p, const Instance& instance) { live_.emplace(p, instance); }
  [[nodiscard]] bool holds(void* p) const { return live_.contains(p); }
  // `p`, held, is freed: its bytes are free again. Returns where it was.
  Instance release(void* p);

  // The step's live buffers (pointer -> where), and forgetting them when they became rogues.
  [[nodiscard]] const std::unordered_map<void*, Instance>& live() const noexcept { return live_; }
  void forget_live() noexcept { live_.clear(); }

  [[nodiscard]] tree::NodeId first_recorded() const noexcept { return first_recorded_; }
  // Buffers of the replayed prefix freed late when the recording began (FreedLate of the plan).
  [[nodiscard]] const std::vector<tree::NodeId>& freed_late() const noexcept { return freed_late_; }
  void add_freed_late(const tree::AllocationTree& tree, const std::vector<tree::NodeId>& late);

 private:
  std::optional<FreeRanges> free_ranges_;
  std::unordered_map<void*, Instance> live_;
  tree::NodeId first_recorded_ = tree::kNoNode;
  std::vector<tree::NodeId> freed_late_;
};

}  // namespace memplan
