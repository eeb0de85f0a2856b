// Validator. Per-buffer checks first (count, sign, alignment, fixed offsets), then one sweep in
// time order that keeps the live buffers ordered by offset (a RankSet of their ranks in address
// order, ties by index). While the set is free of overlaps, a new buffer can only overlap its
// neighbours in that order, so checking those two finds the first overlap of any invalid
// solution: an empty result means a valid one. Ends are
// added without wrapping: an end past the range of Bytes is reported and counts as the top.
#include "memplan/plan/validator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "checked.hpp"
#include "memplan/error.hpp"
#include "rank_set.hpp"

namespace memplan::plan {
namespace {

std::string describe(const Problem& problem, std::span<const Bytes> offsets, std::size_t i) {
  const Buffer& b = problem.buffers[i];
  return fmt::format("buffer {} (id '{}', offset {}, size {}, lifetime [{}, {}))", i, b.id,
                     offsets[i], b.size, b.lower, b.upper);
}

struct Collector {
  std::vector<Violation> found;
  std::size_t limit;
  [[nodiscard]] bool full() const { return limit != 0 && found.size() >= limit; }
  void add(Violation v) {
    if (!full()) found.push_back(std::move(v));
  }
};

void check_each_buffer(const Problem& problem, std::span<const Bytes> offsets, Collector& out) {
  for (std::size_t i = 0; i < problem.buffers.size() && !out.full(); ++i) {
    const Buffer& b = problem.buffers[i];
    const Bytes off = offsets[i];
    if (off < 0) {
      out.add({Violation::Kind::Negative, i, i,
               fmt::format("{} has a negative offset", describe(problem, offsets, i))});
    } else if (b.alignment > 0 && off % b.alignment != 0) {
      out.add({Violation::Kind::Misaligned, i, i,
               fmt::format("{} is not aligned to {}", describe(problem, offsets, i), b.alignment)});
    }
    if (b.occupies() && !detail::checked_add(off, b.size)) {
      out.add({Violation::Kind::OutOfRange, i, i,
               fmt::format("{} ends past the largest offset, {}", describe(problem, offsets, i),
                           std::numeric_limits<Bytes>::max())});
    }
    if (b.fixed_offset && *b.fixed_offset != off) {
      out.add({Violation::Kind::FixedOffsetMoved, i, i,
               fmt::format("{} was moved from its fixed offset {}", describe(problem, offsets, i),
                           *b.fixed_offset)});
    }
  }
}

constexpr std::size_t kStart = std::size_t{1} << (std::numeric_limits<std::size_t>::digits - 1);

// Overlaps among the buffers for which include(i) holds.
template <typename Include>
void check_overlaps(const Problem& problem, std::span<const Bytes> offsets, Collector& out,
                    const Include& include) {
  // Events (instant, kStart bit | buffer): ends sort before starts at the same instant. Both
  // orders are sorted as packed keys, which streams where indirect comparisons would miss.
  std::vector<std::pair<Time, std::size_t>> events;
  std::vector<std::pair<Bytes, std::size_t>> address;  // (offset, buffer)
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (!b.occupies() || !include(i)) continue;
    events.emplace_back(b.lower, kStart | i);
    events.emplace_back(b.upper, i);
    address.emplace_back(offsets[i], i);
  }
  std::sort(events.begin(), events.end());
  std::sort(address.begin(), address.end());
  std::vector<std::size_t> by_rank(address.size());  // the buffers in address order
  std::vector<std::size_t> rank_of(problem.buffers.size(), 0);
  for (std::size_t r = 0; r < address.size(); ++r) {
    by_rank[r] = address[r].second;
    rank_of[address[r].second] = r;
  }

  detail::RankSet live(by_rank.size());  // the live buffers, by rank
  const auto end_of = [&](std::size_t i) {
    return detail::checked_add(offsets[i], problem.buffers[i].size)
        .value_or(std::numeric_limits<Bytes>::max());
  };
  const auto report = [&](std::size_t a, std::size_t b) {
    out.add({Violation::Kind::Overlap, a, b,
             fmt::format("{} overlaps {}", describe(problem, offsets, a),
                         describe(problem, offsets, b))});
  };
  for (const auto& [when, event] : events) {
    if (out.full()) return;
    const std::size_t i = event & ~kStart;
    const std::size_t rank = rank_of[i];
    if ((event & kStart) == 0) {
      live.erase(rank);
      continue;
    }
    if (const std::size_t next = live.next_after(rank); next != detail::RankSet::npos) {
      if (offsets[by_rank[next]] < end_of(i)) report(i, by_rank[next]);
    }
    if (const std::size_t prev = live.before(rank); prev != detail::RankSet::npos) {
      if (end_of(by_rank[prev]) > offsets[i]) report(i, by_rank[prev]);
    }
    live.insert(rank);
  }
}

}  // namespace

std::vector<Violation> find_violations(const Problem& problem, std::span<const Bytes> offsets,
                                       std::size_t max_violations) {
  Collector out{{}, max_violations};
  if (offsets.size() != problem.buffers.size()) {
    out.add({Violation::Kind::WrongCount, 0, 0,
             fmt::format("{} offsets for {} buffers", offsets.size(), problem.buffers.size())});
    return std::move(out.found);
  }
  check_each_buffer(problem, offsets, out);
  check_overlaps(problem, offsets, out, [](std::size_t) { return true; });
  return std::move(out.found);
}

std::vector<Violation> find_fixed_offset_conflicts(const Problem& problem,
                                                   std::size_t max_violations) {
  Collector out{{}, max_violations};
  std::vector<Bytes> offsets(problem.buffers.size(), 0);
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    offsets[i] = problem.buffers[i].fixed_offset.value_or(0);
  }
  check_overlaps(problem, offsets, out,
                 [&](std::size_t i) { return problem.buffers[i].fixed_offset.has_value(); });
  return std::move(out.found);
}

void validate(const Problem& problem, const Solution& solution) {
  const auto violations = find_violations(problem, solution.offsets, 1);
  if (!violations.empty()) throw Error("invalid solution: " + violations.front().message);
  const Bytes actual = arena_size(problem, solution.offsets);
  if (actual != solution.arena_size) {
    throw Error(fmt::format("invalid solution: arena size {} reported, offsets reach {}",
                            solution.arena_size, actual));
  }
  if (solution.arena_size < solution.lower_bound) {
    throw Error(fmt::format("invalid solution: arena size {} is below the lower bound {}",
                            solution.arena_size, solution.lower_bound));
  }
}

}  // namespace memplan::plan
