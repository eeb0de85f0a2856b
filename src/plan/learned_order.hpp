// A branching order learned from failures, for the exact search's restarts.
//
// Static orders (by lifetime, area, section total) decide which of the buffers that could go at
// the same offset is tried first. On the hardest problems none of them is right early enough,
// and a depth-first search never revisits its first choices. So each section counts the
// placements it refused (it overflowed); a buffer's weight is the sum over its sections, older
// counts fading to 70% each run; and restarts try the heaviest buffers first, the static order
// breaking ties. Buffers that keep causing trouble get placed while there is still room to
// arrange them (weighted-degree ordering from constraint programming, with sections as the
// constraints).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "search_model.hpp"

namespace memplan::plan::detail {

class LearnedOrder {
 public:
  // `base_rank`: the static order that breaks ties (lower first).
  LearnedOrder(const SearchModel& model, std::vector<int> base_rank);

  // Adds one run's refusals per section; earlier ones fade (to 70%).
  void learn(std::span<const std::int64_t> section_failures);

  // Heaviest first, then by the base rank: a rank per buffer, lower first.
  [[nodiscard]] const std::vector<int>& rank();

 private:
  const SearchModel& model_;
  std::vector<int> base_rank_;
  std::vector<double> section_weight_;
  std::vector<double> buffer_weight_;  // scratch
  std::vector<int> order_;             // scratch
  std::vector<int> rank_;
};

}  // namespace memplan::plan::detail
