// The learned sites' room: the counting behind LearnedSites (see the header for the idea).
#include "learned_sites.hpp"

#include <algorithm>
#include <iterator>

#include "memplan/tree/branch_planner.hpp"

namespace memplan {

void LearnedSites::forget(Site site) {
  sites_.erase(site);
  std::erase_if(buffers_, [&](const auto& entry) { return entry.second.site == site; });
}

void LearnedSites::outlives(void* p, Site site, bool in_arena) {
  const auto it = sites_.find(site);
  if (it == sites_.end()) return;
  if (!buffers_.try_emplace(p, Buffer{site, in_arena}).second) return;
  ++it->second.live;
  ++it->second.made;
  if (in_arena) ++it->second.in_arena;
}

void LearnedSites::freed(void* p, const StepTree* running, std::uint32_t depth) {
  const auto b = buffers_.find(p);
  if (b == buffers_.end()) return;
  if (const auto it = sites_.find(b->second.site); it != sites_.end()) {
    Entry& e = it->second;
    --e.live;
    if (b->second.in_arena) --e.in_arena;
    ++e.frees;
    // Inside a step of its tree: held through event `depth`; anywhere else, through a whole step.
    const std::uint32_t hold = running == it->first.first ? depth + 1 : tree::kToStepEnd;
    e.hold = std::max(e.hold, hold);
  }
  buffers_.erase(b);
}

void LearnedSites::step_ended() noexcept {
  for (auto& [site, e] : sites_) e.live_at_end = e.live;
}

void LearnedSites::step_begins(const StepTree* tree) noexcept {
  for (auto& [site, e] : sites_) {
    // Buffers made since the last end (outside steps) never count here: live only grows by steps.
    e.freed_between_steps = e.live_at_end > e.live ? e.live_at_end - e.live : 0;
    e.measured = true;
    if (site.first != tree) continue;
    // The pattern: the one buffer live is the last step's, and an older one was freed since.
    const bool pattern = e.live == 1 && e.made == 1 && e.frees >= 1;
    e.pattern_hold = pattern ? std::max(e.pattern_steps > 0 ? e.pattern_hold : 0u, e.hold) : 0;
    e.pattern_steps = pattern ? e.pattern_steps + 1 : 0;
    e.made = e.frees = e.hold = 0;
  }
}

std::optional<LearnedSites::PeriodTwo> LearnedSites::period_two_candidate(
    const StepTree* tree) const {
  for (auto it = sites_.lower_bound({tree, 0}); it != sites_.end() && it->first.first == tree;
       ++it) {
    if (it->second.pattern_steps >= 1) return PeriodTwo{it->first.second, it->second.pattern_hold};
  }
  return std::nullopt;
}

// Rooms the next allocation at the site needs: the pool buffers expected live then, plus one,
// less the pool buffers live now (their blocks are rooms once freed). Until a begin_step has
// measured the habit, nothing is expected to be freed.
std::uint32_t LearnedSites::missing_rooms(const Entry& e) noexcept {
  const std::uint32_t in_pool = e.live - e.in_arena;
  const std::uint32_t expected_live =
      e.measured ? e.live - std::min(e.live, e.freed_between_steps) : e.live;
  const std::uint32_t needed = std::min(in_pool, expected_live) + 1;
  return needed > in_pool ? needed - in_pool : 0;
}

}  // namespace memplan
