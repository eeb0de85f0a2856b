// The canonical search's state lives in flat per-buffer and per-section vectors; every change
// goes through set(), which records the old value on a trail, so backtracking is one loop and
// a found plan can simply be left in place. Parts, candidates and split scratch are stacks
// indexed by position, so nested calls never allocate once the stacks have grown.
#include "canonical_search.hpp"

#include <algorithm>
#include <limits>

namespace memplan::plan::detail {
namespace {

constexpr Bytes kUnplaced = -1;
constexpr Bytes kNoLimit = std::numeric_limits<Bytes>::max();

std::size_t at(int index) { return static_cast<std::size_t>(index); }

}  // namespace

CanonicalSearch::CanonicalSearch(const SearchModel& model) : model_(model) {}

SearchOutcome CanonicalSearch::run(Bytes capacity, std::span<const int> rank,
                                   std::int64_t node_limit, Clock::time_point deadline) {
  capacity_ = capacity;
  rank_ = rank;
  node_limit_ = node_limit;
  deadline_ = deadline;
  nodes_ = 0;
  deadline_passed_ = false;

  const int n = model_.buffer_count();
  const auto sections = at(model_.sections.count);
  offset_.assign(at(n), kUnplaced);
  lowest_.resize(at(n));
  for (int v = 0; v < n; ++v) lowest_[at(v)] = settle(v, 0);
  remaining_ = model_.section_totals;
  crossings_.assign(model_.crossings.begin(), model_.crossings.end());
  floor_.assign(sections, 0);
  for (std::size_t s = 0; s < sections; ++s) {
    Bytes open = kNoLimit;
    for (const int v : model_.members(static_cast<int>(s))) open = std::min(open, lowest_[at(v)]);
    if (open != kNoLimit) floor_[s] = open;
  }
  trail_.clear();
  parts_.clear();
  candidates_.clear();
  pool_.resize(at(n));
  for (int v = 0; v < n; ++v) pool_[at(v)] = v;
  segment_of_.assign(sections, 0);
  failures_.assign(sections, 0);
  witness_.resize(sections);
  for (std::size_t s = 0; s < sections; ++s) {
    const auto members = model_.members(static_cast<int>(s));
    witness_[s] = members.empty() ? 0 : members.front();
  }

  const Part everything{0, at(n), 0, model_.sections.count};
  if (!sections_fit(everything, 0)) return SearchOutcome::Infeasible;
  return search_parts(everything, 0, -1);
}

SearchOutcome CanonicalSearch::search(Part part, Bytes last_offset, int last_rank) {
  if (out_of_budget()) return SearchOutcome::Aborted;

  // The lowest top any unplaced buffer can reach: nothing may start at or above it (dominance).
  Bytes lowest_top = kNoLimit;
  for (std::size_t k = part.begin; k < part.end; ++k) {
    const auto v = at(pool_[k]);
    if (offset_[v] == kUnplaced) lowest_top = std::min(lowest_top, lowest_[v] + model_.size[v]);
  }
  if (lowest_top == kNoLimit) return SearchOutcome::Found;

  const std::size_t first_candidate = candidates_.size();
  for (std::size_t k = part.begin; k < part.end; ++k) {
    const int v = pool_[k];
    const Bytes offset = lowest_[at(v)];
    if (offset_[at(v)] != kUnplaced || offset >= lowest_top) continue;
    // Canonical order: offsets never decrease; equal offsets go by rank.
    if (offset < last_offset || (offset == last_offset && rank_[at(v)] <= last_rank)) continue;
    const int twin = model_.twin_before[at(v)];
    if (twin >= 0 && offset_[at(twin)] == kUnplaced) continue;  // twins go in index order
    candidates_.push_back(v);
  }
  std::sort(candidates_.begin() + static_cast<std::ptrdiff_t>(first_candidate), candidates_.end(),
            [&](int a, int b) {
              if (lowest_[at(a)] != lowest_[at(b)]) return lowest_[at(a)] < lowest_[at(b)];
              return rank_[at(a)] < rank_[at(b)];
            });
  const std::size_t end_candidate = candidates_.size();

  // Whatever goes next, every unplaced buffer will sit at or above its offset, so the offset plus
  // the heaviest remaining section must fit: candidates come sorted by offset, so the first one
  // that fails ends the node.
  Bytes heaviest = 0;
  for (int s = part.first_section; s < part.last_section; ++s) {
    heaviest = std::max(heaviest, remaining_[at(s)]);
  }

  SearchOutcome outcome = SearchOutcome::Infeasible;
  for (std::size_t c = first_candidate; c < end_candidate; ++c) {
    const int v = candidates_[c];
    const Bytes offset = lowest_[at(v)];
    if (offset + heaviest > capacity_) break;
    const std::size_t mark = trail_.size();
    const bool split = place(v, offset);
    if (changed_sections_fit()) {
      const SearchOutcome below =
          split ? search_parts(part, offset, rank_[at(v)]) : search(part, offset, rank_[at(v)]);
      if (below == SearchOutcome::Found) {
        outcome = below;  // keep the placement: the caller reads it
        break;
      }
      if (below == SearchOutcome::Aborted) {
        undo(mark);
        outcome = below;
        break;
      }
    }
    undo(mark);
  }
  candidates_.resize(first_candidate);
  return outcome;
}

SearchOutcome CanonicalSearch::search_parts(Part part, Bytes last_offset, int last_rank) {
  // Cut the part's sections where no unplaced buffer crosses; each segment becomes a part.
  const std::size_t first_part = parts_.size();
  const std::size_t pool_mark = pool_.size();
  int segment_start = part.first_section;
  for (int s = part.first_section; s < part.last_section; ++s) {
    segment_of_[at(s)] = static_cast<int>(parts_.size() - first_part);
    if (s + 1 == part.last_section || crossings_[at(s)] == 0) {
      parts_.push_back({0, 0, segment_start, s + 1});
      segment_start = s + 1;
    }
  }
  // Count each segment's unplaced members (in `end`), then lay their lists out in the pool.
  for (std::size_t k = part.begin; k < part.end; ++k) {
    const auto v = at(pool_[k]);
    if (offset_[v] != kUnplaced) continue;
    ++parts_[first_part + at(segment_of_[at(model_.sections.first[v])])].end;
  }
  std::size_t cursor = pool_mark;
  std::size_t nonempty = 0;
  std::size_t only = first_part;
  for (std::size_t p = first_part; p < parts_.size(); ++p) {
    const std::size_t count = parts_[p].end;
    parts_[p].begin = parts_[p].end = cursor;
    cursor += count;
    if (count > 0) {
      ++nonempty;
      only = p;
    }
  }
  pool_.resize(cursor);
  for (std::size_t k = part.begin; k < part.end; ++k) {
    const int v = pool_[k];
    if (offset_[at(v)] != kUnplaced) continue;
    Part& home = parts_[first_part + at(segment_of_[at(model_.sections.first[at(v)])])];
    pool_[home.end++] = v;
  }

  SearchOutcome outcome = SearchOutcome::Found;
  if (nonempty == 1) {
    outcome = search(parts_[only], last_offset, last_rank);  // nothing split off: go on as before
  } else {
    // Independent parts: each starts its own canonical order from offset 0.
    const std::size_t end_part = parts_.size();
    for (std::size_t p = first_part; p < end_part; ++p) {
      const Part piece = parts_[p];
      if (piece.begin == piece.end) continue;
      outcome = search(piece, 0, -1);
      if (outcome != SearchOutcome::Found) break;
    }
  }
  parts_.resize(first_part);
  pool_.resize(pool_mark);
  return outcome;
}

bool CanonicalSearch::place(int v, Bytes offset) {
  const auto i = at(v);
  const Bytes size = model_.size[i];
  const Bytes top = offset + size;
  set(offset_[i], offset);

  // Sections where a buffer's lowest offset rose, or v's size left, may no longer fit. Every
  // such buffer is alive with v, so its run of sections meets v's: together they cover one
  // contiguous run, [changed_first_, changed_last_), checked by changed_sections_fit().
  changed_first_ = model_.sections.first[i];
  changed_last_ = model_.sections.last[i];
  for (const int u : model_.neighbours(v)) {
    const auto j = at(u);
    if (offset_[j] != kUnplaced || lowest_[j] >= top) continue;
    set(lowest_[j], settle(u, top));
    changed_first_ = std::min(changed_first_, model_.sections.first[j]);
    changed_last_ = std::max(changed_last_, model_.sections.last[j]);
  }

  // Every unplaced buffer sharing a section with v is a neighbour of v: it now starts at v's
  // top or higher, which is the section's new floor.
  const int first = model_.sections.first[i];
  const int last = model_.sections.last[i];
  for (int s = first; s < last; ++s) {
    if (floor_[at(s)] < top) set(floor_[at(s)], top);
    set(remaining_[at(s)], remaining_[at(s)] - size);
  }
  bool opened = false;
  for (int s = first; s + 1 < last; ++s) {
    set(crossings_[at(s)], crossings_[at(s)] - 1);
    opened = opened || crossings_[at(s)] == 0;
  }
  return opened;
}

bool CanonicalSearch::changed_sections_fit() {
  for (int s = changed_first_; s < changed_last_; ++s) {
    const Bytes remaining = remaining_[at(s)];
    if (remaining == 0) continue;
    // The unplaced members stack from the lowest offset any of them can take; it is enough to
    // find one low enough. The last one found usually still is (offsets only rise on the way
    // down the tree), so it is tried first; it is a hint, not state, and needs no undo.
    const Bytes highest_start = capacity_ - remaining;
    if (floor_[at(s)] > highest_start) {
      ++failures_[at(s)];
      return false;
    }
    const auto low_enough = [&](int w) {
      return offset_[at(w)] == kUnplaced && lowest_[at(w)] <= highest_start;
    };
    if (low_enough(witness_[at(s)])) continue;
    bool fits = false;
    for (const int w : model_.members(s)) {
      if (low_enough(w)) {
        witness_[at(s)] = w;
        fits = true;
        break;
      }
    }
    if (!fits) {
      ++failures_[at(s)];
      return false;
    }
  }
  return true;
}

bool CanonicalSearch::sections_fit(const Part& part, Bytes current_offset) const {
  for (int s = part.first_section; s < part.last_section; ++s) {
    const Bytes remaining = remaining_[at(s)];
    if (remaining > 0 && std::max(floor_[at(s)], current_offset) + remaining > capacity_) {
      return false;
    }
  }
  return true;
}

Bytes CanonicalSearch::settle(int v, Bytes from) const {
  const Bytes size = model_.size[at(v)];
  const Bytes alignment = model_.alignment[at(v)];
  Bytes offset = align_up(from, alignment);
  for (const FixedNeighbour& fixed : model_.fixed_neighbours(v)) {  // sorted by begin
    if (fixed.end <= offset) continue;
    if (fixed.begin >= offset + size) break;
    offset = align_up(fixed.end, alignment);
  }
  return offset;
}

void CanonicalSearch::undo(std::size_t mark) {
  while (trail_.size() > mark) {
    *trail_.back().slot = trail_.back().old;
    trail_.pop_back();
  }
}

bool CanonicalSearch::out_of_budget() {
  if (++nodes_ > node_limit_) return true;
  if ((nodes_ & 1023) == 0 && Clock::now() > deadline_) deadline_passed_ = true;
  return deadline_passed_;
}

}  // namespace memplan::plan::detail
