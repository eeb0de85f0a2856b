// The address ranges taken by the buffers alive at one moment of a sweep over time, and the free
// gaps between them, indexed two ways: by address with the longest gap of each subtree (first
// fit: the lowest gap that holds a buffer) and by length (best fit: the tightest one). Each
// placement, release and fit costs O(log n) for n live buffers, where walking the live buffers
// in address order (as the other greedy indexes do) costs O(n).
//
// Fits follow GapFit's rules exactly (gap_fit.hpp), so the sweep's plans equal the other
// indexes': first fit is the lowest aligned offset whose bytes are free; best fit the offset
// with the least slack to the end of its gap, the lowest among equals; without a gap that holds
// the buffer, the aligned top. Alignment can make a gap that is long enough too short once
// aligned, or (best fit) leave a longer gap as tight as a shorter one; each such gap costs one
// more step. Where every size and offset is a multiple of the alignments, there are none.
#pragma once

#include <map>
#include <memory_resource>
#include <set>
#include <span>
#include <utility>

#include "gap_fit.hpp"
#include "gap_tree.hpp"

namespace memplan::plan::detail {

class LiveSpans {
 public:
  LiveSpans() = default;
  LiveSpans(const LiveSpans&) = delete;  // the containers point at pool_
  LiveSpans& operator=(const LiveSpans&) = delete;

  // Forgets every span. `granule` divides every size, alignment and fixed offset of the run
  // (1 will do): span boundaries are then multiples of it, so aligning pads less.
  void reset(Bytes granule);
  // Takes [begin, end), which must lie in a free gap; throws std::logic_error otherwise.
  void take(Bytes begin, Bytes end);
  // Frees the span taken at `begin`.
  void release(Bytes begin);

  // The lowest offset >= from, aligned, whose `size` bytes are all free.
  [[nodiscard]] Bytes first_fit(Bytes size, Bytes alignment, Bytes from) const;
  // GapFit's best fit over the free gaps.
  [[nodiscard]] Bytes best_fit(Bytes size, Bytes alignment) const;
  // The taken spans in address order, merged with `others` (sorted by begin), into `fit`.
  void feed(GapFit& fit, std::span<const std::pair<Bytes, Bytes>> others) const;

 private:
  void add_gap(Bytes begin, Bytes end);
  void remove_gap(Bytes begin, Bytes end);
  [[nodiscard]] Bytes top() const { return spans_.empty() ? 0 : spans_.rbegin()->second; }

  Bytes granule_ = 1;
  // Tree nodes come from a pool that reuses freed ones: far fewer cache misses and allocator
  // calls than one heap block each, with a million buffers alive.
  std::pmr::unsynchronized_pool_resource pool_;
  std::pmr::map<Bytes, Bytes> spans_{&pool_};                 // begin -> end, disjoint
  GapTree by_address_;                                        // finite free gaps, length > 0
  std::pmr::set<std::pair<Bytes, Bytes>> by_length_{&pool_};  // the same as (length, begin)
};

}  // namespace memplan::plan::detail
