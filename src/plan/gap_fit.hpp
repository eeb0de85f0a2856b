// Choosing a gap for one buffer from the spans its placed neighbours take, fed in offset order.
//
// Both ways the greedy finds a buffer's placed neighbours (its overlap-graph list, sorted; or the
// offset-ordered list of everything placed, filtered by lifetime) end in this one scan, so they
// give identical plans: first-fit takes the lowest gap that holds the buffer after alignment,
// best-fit the one with the least slack (lowest on ties), and without a gap the space above all.
#pragma once

#include <algorithm>
#include <limits>

#include "memplan/plan/greedy.hpp"

namespace memplan::plan::detail {

// Values stay below kMaxArenaBytes plus a few sizes and alignments (the callers stop a plan that
// passes kMaxArenaBytes), so no sum here can wrap.
class GapFit {
 public:
  GapFit(Bytes size, Bytes alignment, Fit fit) : size_(size), alignment_(alignment), fit_(fit) {}

  // One taken span [begin, end), in non-decreasing order of begin. True once the answer is
  // final (a first fit, or a best fit without slack), so the caller may stop feeding.
  bool feed(Bytes begin, Bytes end) {
    const Bytes start = align_up(cursor_, alignment_);
    if (start + size_ <= begin) {
      const Bytes slack = begin - start - size_;
      if (slack < best_slack_) {
        best_slack_ = slack;
        best_ = start;
        if (fit_ == Fit::First || slack == 0) return true;
      }
    }
    cursor_ = std::max(cursor_, end);
    return false;
  }

  [[nodiscard]] Bytes offset() const { return best_ >= 0 ? best_ : align_up(cursor_, alignment_); }

 private:
  Bytes size_;
  Bytes alignment_;
  Fit fit_;
  Bytes cursor_ = 0;  // everything below is taken (or unusable)
  Bytes best_ = -1;
  Bytes best_slack_ = std::numeric_limits<Bytes>::max();
};

}  // namespace memplan::plan::detail
