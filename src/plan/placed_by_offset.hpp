// The placed buffers of a greedy run, kept in offset order, for problems so dense that a buffer
// overlaps a good part of all others (somas/bert_base: 5,620 buffers, ~1,000 neighbours each).
//
// There, sorting every buffer's placed neighbours costs O(d log d) per placement and building the
// overlap graph alone costs more than the whole plan should. Keeping one list of everything
// placed in offset order instead makes each placement one linear, cache-friendly pass that
// skips the buffers not alive with it: O(n) per placement, no graph, no sort. The list holds
// indices only, so an insertion moves 4 bytes an entry.
#pragma once

#include <algorithm>
#include <vector>

#include "gap_fit.hpp"
#include "overlap_index.hpp"

namespace memplan::plan::detail {

class PlacedByOffset {
 public:
  // Forgets every placement; `buffers` is the number of buffers a run may place.
  void reset(std::size_t buffers) {
    order_.clear();
    spans_.resize(buffers);
  }

  void insert(int v, Lifetime life, Bytes begin, Bytes end) {
    spans_[static_cast<std::size_t>(v)] = {life.lower, life.upper, begin, end};
    const auto where = std::upper_bound(order_.begin(), order_.end(), begin, [&](Bytes b, int u) {
      return b < spans_[static_cast<std::size_t>(u)].begin;
    });
    order_.insert(where, v);
  }

  // Feeds `fit` the spans of the placed buffers alive with `life`, in offset order.
  void feed(GapFit& fit, Lifetime life) const {
    for (const int u : order_) {
      const Span& span = spans_[static_cast<std::size_t>(u)];
      if (span.lower < life.upper && life.lower < span.upper && fit.feed(span.begin, span.end)) {
        return;
      }
    }
  }

 private:
  // Everything the scan reads about one buffer, in one 32-byte record: one cache line a visit.
  struct Span {
    Time lower;
    Time upper;
    Bytes begin;
    Bytes end;
  };

  std::vector<int> order_;   // placed buffers, by non-decreasing offset
  std::vector<Span> spans_;  // per buffer, valid once placed
};

}  // namespace memplan::plan::detail
