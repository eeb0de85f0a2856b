// The placed buffers of a greedy run indexed by time: a segment tree over the problem's instants
// whose nodes keep the union of the address ranges placed there. For the orders other than
// start and end, on problems where long-lived buffers overlap most others.
//
// There the overlap graph has too many entries to build (a short buffer overlaps every
// long-lived one alive with it) and the scan walks every placed buffer for every placement:
// O(n²), two seconds on a 62,000-buffer IOPDDL trace. Here a placed buffer is stored at the
// O(log n) nodes that cover its lifetime ("own"), and its address range is merged into the union
// of everything placed under each node that some lifetime's cover uses ("below"). A buffer's
// placed neighbours are then the own sets of the nodes its cover lies under and the below sets
// of its cover: O(log n) unions, each a sorted list of disjoint ranges in which long-lived
// buffers stacked together are one entry. Their gaps are the gaps between the neighbours, so
// the plans are the scan's (the greedy tests check it).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "gap_fit.hpp"
#include "overlap_index.hpp"

namespace memplan::plan::detail {

// Disjoint, non-touching address ranges, sorted.
class RangeUnion {
 public:
  void add(Bytes begin, Bytes end);
  void clear() { ranges_.clear(); }
  [[nodiscard]] std::span<const std::pair<Bytes, Bytes>> ranges() const { return ranges_; }

 private:
  std::vector<std::pair<Bytes, Bytes>> ranges_;
};

class TimeTree {
 public:
  explicit TimeTree(std::span<const Lifetime> lifetimes);

  // Forgets every placement.
  void reset();
  void insert(int v, Bytes begin, Bytes end);
  // Feeds `fit` the ranges taken by the placed buffers alive with v, in address order.
  void feed(GapFit& fit, int v);

 private:
  // The nodes of v's cover (nodes within its lifetime whose parents are not) and the nodes
  // above them that its lifetime only partly covers, into cover_ and above_.
  void collect(int v);

  std::size_t leaves_ = 1;                                           // a power of two
  std::vector<std::pair<std::uint32_t, std::uint32_t>> leaf_range_;  // per buffer: [first, last)
  std::vector<RangeUnion> own_;     // per node: buffers whose cover holds the node
  std::vector<RangeUnion> below_;   // per node: everything placed in its subtree
  std::vector<bool> needs_below_;   // per node: in some buffer's cover
  std::vector<std::size_t> cover_;  // scratch
  std::vector<std::size_t> above_;  // scratch
  std::vector<std::span<const std::pair<Bytes, Bytes>>> sources_;  // scratch: merged in feed
  std::vector<std::pair<Bytes, Bytes>> gathered_;                  // scratch: their ranges
  std::vector<std::pair<Bytes, Bytes>> merged_;                    // scratch: a merge pass
  std::vector<std::size_t> bounds_;  // scratch: where each sorted run in gathered_ ends
};

}  // namespace memplan::plan::detail
