// Cross sections: the moments when the set of live buffers is largest, in time order.
//
// Between two instants the live set only grows until the first buffer dies; that set (a maximal
// clique of the interval graph) is one section. Every instant's live set is contained in some
// section, so a constraint checked on sections holds everywhere: within a section all buffers
// are alive together and must stack, so their sizes must fit between the section's floor and the
// capacity. A buffer belongs to a contiguous run of sections [first, last).
#pragma once

#include <span>
#include <vector>

#include "overlap_index.hpp"

namespace memplan::plan::detail {

struct CrossSections {
  std::vector<int> first;  // per buffer: its first section
  std::vector<int> last;   // per buffer: one past its last section
  int count = 0;           // number of sections

  // Sum of `weights` of the buffers in each section, by a difference array in O(n + count);
  // saturating at the range of Bytes (only a problem check_problem rejects gets there).
  [[nodiscard]] std::vector<Bytes> totals(std::span<const Bytes> weights) const;

  // Buffers crossing from section s to s + 1 (index s), for s in [0, count - 1).
  [[nodiscard]] std::vector<int> crossings() const;
};

[[nodiscard]] CrossSections cross_sections(std::span<const Lifetime> lifetimes);

// The heaviest total among sections [first, last), answered in O(1) after O(s log s) set-up.
class RangeMax {
 public:
  explicit RangeMax(std::vector<Bytes> values);
  [[nodiscard]] Bytes max(int first, int last) const;

 private:
  std::vector<std::vector<Bytes>> levels_;  // levels_[k][i] = max of values[i, i + 2^k)
};

}  // namespace memplan::plan::detail
