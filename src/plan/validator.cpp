// Validator. Per-buffer checks first (count, sign, alignment, fixed offsets), then one sweep in
// time order that keeps the live buffers in a set ordered by offset. While the set is free of
// overlaps, a new buffer can only overlap its neighbours in that order, so checking those two
// finds the first overlap of any invalid solution: an empty result means a valid one.
#include "memplan/plan/validator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <tuple>
#include <utility>

#include "memplan/error.hpp"

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
               fmt::format("{} is not aligned to {}", describe(problem, offsets, i),
                           b.alignment)});
    }
    if (b.fixed_offset && *b.fixed_offset != off) {
      out.add({Violation::Kind::FixedOffsetMoved, i, i,
               fmt::format("{} was moved from its fixed offset {}",
                           describe(problem, offsets, i), *b.fixed_offset)});
    }
  }
}

void check_overlaps(const Problem& problem, std::span<const Bytes> offsets, Collector& out) {
  // Events (instant, is_start, buffer): ends sort before starts at the same instant.
  std::vector<std::tuple<Time, bool, std::size_t>> events;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (!b.occupies()) continue;
    events.emplace_back(b.lower, true, i);
    events.emplace_back(b.upper, false, i);
  }
  std::sort(events.begin(), events.end());

  std::set<std::pair<Bytes, std::size_t>> live;  // (offset, buffer), ordered by offset
  const auto end_of = [&](std::size_t i) { return offsets[i] + problem.buffers[i].size; };
  const auto report = [&](std::size_t a, std::size_t b) {
    out.add({Violation::Kind::Overlap, a, b,
             fmt::format("{} overlaps {}", describe(problem, offsets, a),
                         describe(problem, offsets, b))});
  };
  for (const auto& [when, is_start, i] : events) {
    if (out.full()) return;
    if (!is_start) {
      live.erase({offsets[i], i});
      continue;
    }
    const auto next = live.lower_bound({offsets[i], 0});
    if (next != live.end() && next->first < end_of(i)) report(i, next->second);
    if (next != live.begin()) {
      const std::size_t prev = std::prev(next)->second;
      if (end_of(prev) > offsets[i]) report(i, prev);
    }
    live.emplace(offsets[i], i);
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
  check_overlaps(problem, offsets, out);
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
