// Weights by prefix sums over sections (a buffer spans a contiguous run of them), so ranking
// costs O(n log n + sections) per restart, nothing per search node.
#include "learned_order.hpp"

#include <algorithm>
#include <numeric>

namespace memplan::plan::detail {
namespace {

// How much of a section's past refusals count after each run: recent ones matter most.
constexpr double kFade = 0.7;

}  // namespace

LearnedOrder::LearnedOrder(const SearchModel& model, std::vector<int> base_rank)
    : model_(model),
      base_rank_(std::move(base_rank)),
      section_weight_(static_cast<std::size_t>(model.sections.count), 0.0) {}

void LearnedOrder::learn(std::span<const std::int64_t> section_failures) {
  for (std::size_t s = 0; s < section_weight_.size() && s < section_failures.size(); ++s) {
    section_weight_[s] = section_weight_[s] * kFade + static_cast<double>(section_failures[s]);
  }
}

const std::vector<int>& LearnedOrder::rank() {
  const auto n = static_cast<std::size_t>(model_.buffer_count());
  std::vector<double> prefix(section_weight_.size() + 1, 0.0);
  std::partial_sum(section_weight_.begin(), section_weight_.end(), prefix.begin() + 1);
  buffer_weight_.resize(n);
  for (std::size_t v = 0; v < n; ++v) {
    buffer_weight_[v] = prefix[static_cast<std::size_t>(model_.sections.last[v])] -
                        prefix[static_cast<std::size_t>(model_.sections.first[v])];
  }
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), 0);
  std::sort(order_.begin(), order_.end(), [&](int a, int b) {
    const auto i = static_cast<std::size_t>(a);
    const auto j = static_cast<std::size_t>(b);
    if (buffer_weight_[i] != buffer_weight_[j]) return buffer_weight_[i] > buffer_weight_[j];
    return base_rank_[i] < base_rank_[j];
  });
  rank_.resize(n);
  for (std::size_t r = 0; r < n; ++r) {
    rank_[static_cast<std::size_t>(order_[r])] = static_cast<int>(r);
  }
  return rank_;
}

}  // namespace memplan::plan::detail
