// The exact search's view of a problem, flattened once: only the buffers it decides (occupying,
// no fixed offset), their overlap graph, the fixed-offset buffers each one must avoid, and the
// cross sections with their members. Everything is indices into flat vectors so that the search's
// hot loop touches no maps and allocates nothing.
#pragma once

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "cross_sections.hpp"
#include "memplan/plan/problem.hpp"
#include "overlap_index.hpp"

namespace memplan::plan::detail {

// A fixed-offset buffer seen from a free one: the bytes [begin, end) are taken while both live.
struct FixedNeighbour {
  Bytes begin = 0;
  Bytes end = 0;
};

class SearchModel {
 public:
  explicit SearchModel(const Problem& problem);

  [[nodiscard]] int buffer_count() const { return static_cast<int>(problem_index.size()); }
  [[nodiscard]] std::span<const int> neighbours(int v) const { return overlaps.neighbours(v); }
  [[nodiscard]] std::span<const FixedNeighbour> fixed_neighbours(int v) const {
    const auto i = static_cast<std::size_t>(v);
    return {obstacle_list.data() + obstacle_starts[i], obstacle_starts[i + 1] - obstacle_starts[i]};
  }
  [[nodiscard]] std::span<const int> members(int section) const {
    const auto s = static_cast<std::size_t>(section);
    return {member_list.data() + member_starts[s], member_starts[s + 1] - member_starts[s]};
  }

  std::vector<std::size_t> problem_index;  // model buffer -> index in the problem
  std::vector<Lifetime> lifetimes;
  std::vector<Bytes> size;
  std::vector<Bytes> alignment;
  OverlapIndex overlaps;              // among model buffers only
  CrossSections sections;             // of model buffers only
  std::vector<Bytes> section_totals;  // sum of member sizes
  std::vector<int> crossings;         // buffers crossing each section boundary
  Bytes granularity = 1;              // every arena size is a multiple of it
  // Per buffer: the previous buffer identical to it (lifetime, size, alignment), or -1. Twins
  // are interchangeable, so the search places them in index order (a symmetry cut).
  std::vector<int> twin_before;

 private:
  std::vector<std::size_t> obstacle_starts;
  std::vector<FixedNeighbour> obstacle_list;  // per buffer, sorted by begin
  std::vector<std::size_t> member_starts;
  std::vector<int> member_list;
};

// How many entries the model's overlap and section lists would hold, computed in O(n log n)
// without building them, to refuse problems too large to search.
[[nodiscard]] std::size_t model_footprint(const Problem& problem);

}  // namespace memplan::plan::detail
