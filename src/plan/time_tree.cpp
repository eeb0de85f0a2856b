// The tree is implicit (node k has children 2k and 2k + 1, leaves from leaves_), over the
// elementary intervals between the problem's distinct instants. A lifetime's cover comes from the
// usual bottom-up walk; the nodes it partly covers are the ancestors of its first and last leaf
// that are not within it.
#include "time_tree.hpp"

#include <algorithm>
#include <functional>

namespace memplan::plan::detail {

void RangeUnion::add(Bytes begin, Bytes end) {
  // The first range that ends at or after `begin` and the first that begins after `end`: every
  // range between touches [begin, end) and merges with it.
  const auto first = std::lower_bound(ranges_.begin(), ranges_.end(), begin,
                                      [](const auto& range, Bytes b) { return range.second < b; });
  auto last = first;
  while (last != ranges_.end() && last->first <= end) ++last;
  if (first == last) {
    ranges_.insert(first, {begin, end});
    return;
  }
  first->first = std::min(first->first, begin);
  first->second = std::max((last - 1)->second, end);
  ranges_.erase(first + 1, last);
}

TimeTree::TimeTree(std::span<const Lifetime> lifetimes) {
  std::vector<Time> instants;
  instants.reserve(2 * lifetimes.size());
  for (const Lifetime& life : lifetimes) {
    instants.push_back(life.lower);
    instants.push_back(life.upper);
  }
  std::sort(instants.begin(), instants.end());
  instants.erase(std::unique(instants.begin(), instants.end()), instants.end());
  while (leaves_ + 1 < instants.size()) leaves_ *= 2;
  const auto rank = [&](Time t) {
    return static_cast<std::uint32_t>(std::lower_bound(instants.begin(), instants.end(), t) -
                                      instants.begin());
  };
  leaf_range_.reserve(lifetimes.size());
  for (const Lifetime& life : lifetimes)
    leaf_range_.emplace_back(rank(life.lower), rank(life.upper));
  own_.resize(2 * leaves_);
  below_.resize(2 * leaves_);
  needs_below_.assign(2 * leaves_, false);
  for (std::size_t v = 0; v < lifetimes.size(); ++v) {
    collect(static_cast<int>(v));
    for (const std::size_t node : cover_) needs_below_[node] = true;
  }
}

void TimeTree::collect(int v) {
  cover_.clear();
  above_.clear();
  // Plain variables, not a structured binding: clang 14 (the fuzz build) cannot capture one.
  const std::size_t first = leaf_range_[static_cast<std::size_t>(v)].first;
  const std::size_t last = leaf_range_[static_cast<std::size_t>(v)].second;
  for (std::size_t l = first + leaves_, r = last + leaves_; l < r; l /= 2, r /= 2) {
    if (l & 1) cover_.push_back(l++);
    if (r & 1) cover_.push_back(--r);
  }
  // Ancestors of the first and last leaf that reach outside [first, last): the two paths meet,
  // so each node is taken once (the second path stops where it joins the first).
  const auto partly = [&](std::size_t node, int depth_from_leaf) {
    const std::size_t lo = (node << depth_from_leaf) - leaves_;
    const std::size_t hi = lo + (std::size_t{1} << depth_from_leaf);
    return lo < first || hi > last;
  };
  int depth = 1;
  for (std::size_t node = (first + leaves_) / 2; node >= 1; node /= 2, ++depth) {
    if (partly(node, depth)) above_.push_back(node);
  }
  depth = 1;
  for (std::size_t node = (last - 1 + leaves_) / 2; node >= 1; node /= 2, ++depth) {
    if (node == (first + leaves_) >> depth) break;  // joined the first path
    if (partly(node, depth)) above_.push_back(node);
  }
}

void TimeTree::reset() {
  for (RangeUnion& u : own_) u.clear();
  for (RangeUnion& u : below_) u.clear();
}

void TimeTree::insert(int v, Bytes begin, Bytes end) {
  collect(v);
  for (const std::size_t node : cover_) {
    own_[node].add(begin, end);
    if (needs_below_[node]) below_[node].add(begin, end);
  }
  for (const std::size_t node : above_) {
    if (needs_below_[node]) below_[node].add(begin, end);
  }
}

void TimeTree::feed(GapFit& fit, int v) {
  collect(v);
  sources_.clear();
  for (const std::size_t node : cover_) sources_.push_back(below_[node].ranges());
  for (const std::size_t node : above_) sources_.push_back(own_[node].ranges());
  // Each source is sorted: merging them pairwise, O(R log k) for R ranges in k sources, costs
  // half of sorting them all (a heap-based k-way merge costs more than either).
  gathered_.clear();
  bounds_.assign(1, 0);
  for (const auto& source : sources_) {
    if (source.empty()) continue;
    gathered_.insert(gathered_.end(), source.begin(), source.end());
    bounds_.push_back(gathered_.size());
  }
  const auto by_begin = [](const auto& a, const auto& b) { return a.first < b.first; };
  while (bounds_.size() > 2) {
    merged_.resize(gathered_.size());
    std::size_t kept = 1;
    for (std::size_t r = 0; r + 1 < bounds_.size(); r += 2) {
      const auto first = gathered_.begin() + static_cast<std::ptrdiff_t>(bounds_[r]);
      const auto middle = gathered_.begin() + static_cast<std::ptrdiff_t>(bounds_[r + 1]);
      const std::size_t end_index = bounds_[std::min(r + 2, bounds_.size() - 1)];
      const auto last = gathered_.begin() + static_cast<std::ptrdiff_t>(end_index);
      std::merge(first, middle, middle, last,
                 merged_.begin() + static_cast<std::ptrdiff_t>(bounds_[r]), by_begin);
      bounds_[kept++] = end_index;
    }
    bounds_.resize(kept);
    gathered_.swap(merged_);
  }
  for (const auto& [begin, end] : gathered_) {
    if (fit.feed(begin, end)) return;
  }
}

}  // namespace memplan::plan::detail
