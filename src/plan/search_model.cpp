// Building the exact search's model: split the occupying buffers into decided (free) ones and
// obstacles (fixed), then index their overlaps and sections.
#include "search_model.hpp"

#include <algorithm>
#include <numeric>
#include <tuple>

namespace memplan::plan::detail {
namespace {

std::vector<std::size_t> free_buffers(const Problem& problem) {
  std::vector<std::size_t> chosen;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (b.occupies() && !b.fixed_offset) chosen.push_back(i);
  }
  return chosen;
}

}  // namespace

SearchModel::SearchModel(const Problem& problem)
    : problem_index(free_buffers(problem)),
      lifetimes(lifetimes_of(problem, problem_index)),
      overlaps(lifetimes),
      sections(cross_sections(lifetimes)) {
  for (const std::size_t i : problem_index) {
    size.push_back(problem.buffers[i].size);
    alignment.push_back(problem.buffers[i].alignment);
  }
  section_totals = sections.totals(size);
  crossings = sections.crossings();

  Bytes gcd = 0;
  for (std::size_t v = 0; v < size.size(); ++v)
    gcd = std::gcd(gcd, std::gcd(size[v], alignment[v]));

  // Obstacles: fixed buffers overlapping each free one. Fixed buffers are few in practice (a
  // shared prefix), so a sort of the fixed ones by start and a scan per free buffer suffice.
  std::vector<std::size_t> fixed;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (b.occupies() && b.fixed_offset) fixed.push_back(i);
  }
  std::sort(fixed.begin(), fixed.end(), [&](std::size_t a, std::size_t b) {
    return problem.buffers[a].lower < problem.buffers[b].lower;
  });
  obstacle_starts.assign(size.size() + 1, 0);
  for (std::size_t v = 0; v < size.size(); ++v) {
    const Lifetime life = lifetimes[v];
    const std::size_t first = obstacle_list.size();
    for (const std::size_t f : fixed) {
      const Buffer& b = problem.buffers[f];
      if (b.lower >= life.upper) break;
      if (b.upper <= life.lower) continue;
      obstacle_list.push_back({*b.fixed_offset, *b.fixed_offset + b.size});
      gcd = std::gcd(gcd, std::gcd(*b.fixed_offset, b.size));
    }
    std::sort(obstacle_list.begin() + static_cast<std::ptrdiff_t>(first), obstacle_list.end(),
              [](const FixedNeighbour& a, const FixedNeighbour& b) { return a.begin < b.begin; });
    obstacle_starts[v + 1] = obstacle_list.size();
  }
  granularity = std::max<Bytes>(gcd, 1);

  twin_before.assign(size.size(), -1);
  std::vector<int> by_shape(size.size());
  std::iota(by_shape.begin(), by_shape.end(), 0);
  const auto shape = [&](int v) {
    const auto i = static_cast<std::size_t>(v);
    return std::tuple(lifetimes[i].lower, lifetimes[i].upper, size[i], alignment[i]);
  };
  std::sort(by_shape.begin(), by_shape.end(),
            [&](int a, int b) { return std::pair(shape(a), a) < std::pair(shape(b), b); });
  for (std::size_t k = 1; k < by_shape.size(); ++k) {
    if (shape(by_shape[k - 1]) == shape(by_shape[k])) {
      twin_before[static_cast<std::size_t>(by_shape[k])] = by_shape[k - 1];
    }
  }

  member_starts.assign(static_cast<std::size_t>(sections.count) + 1, 0);
  for (std::size_t v = 0; v < size.size(); ++v) {
    for (int s = sections.first[v]; s < sections.last[v]; ++s) {
      ++member_starts[static_cast<std::size_t>(s) + 1];
    }
  }
  std::partial_sum(member_starts.begin(), member_starts.end(), member_starts.begin());
  member_list.resize(member_starts.back());
  std::vector<std::size_t> fill(member_starts.begin(), member_starts.end() - 1);
  for (std::size_t v = 0; v < size.size(); ++v) {
    for (int s = sections.first[v]; s < sections.last[v]; ++s) {
      member_list[fill[static_cast<std::size_t>(s)]++] = static_cast<int>(v);
    }
  }
}

std::size_t model_footprint(const Problem& problem) {
  const std::vector<Lifetime> lifetimes = lifetimes_of(problem, free_buffers(problem));
  const CrossSections sections = cross_sections(lifetimes);
  std::size_t total = 0;
  for (std::size_t v = 0; v < lifetimes.size(); ++v) {
    total += static_cast<std::size_t>(sections.last[v] - sections.first[v]);
  }
  for (const std::int64_t degree : overlap_degrees(lifetimes)) {
    total += static_cast<std::size_t>(degree);
  }
  return total;
}

}  // namespace memplan::plan::detail
