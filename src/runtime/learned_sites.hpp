// The learned rogue sites, and how much pool room each needs between steps.
//
// A learned site is served from the persistent pool, and the pool keeps free room for the site's
// next buffer, mapped at the end of a step, so that the next step makes no backend call. How many
// rooms: as many as the site's buffers that will still be live when the next step allocates
// there, plus one. "One more than is live now" over-counts the common loop, which keeps the last
// output until the next one exists and then drops it: at the step's end two are live, one is
// freed before the next step, so two rooms serve it forever, where that rule maps a third (a
// whole logits tensor, for a language model). So the frees between steps are measured (live at a
// step's end minus live at the next begin_step) and expected again. A caller that starts keeping
// more than it did pays once: the next step's allocation there grows the pool, and the habit is
// measured anew.
//
// The same books show which site is a step's output that outlives its step by less than one step
// (period_two_candidate, at a begin_step of its tree): exactly one of its buffers is live, the one
// the last step made, and the one before it was freed since the last begin_step: it outlived its
// own step and was gone before the next one's end. Where that free came (inside the step, at which
// event, or between steps) is how long the previous output must be held in the next plans
// (period_two_planner.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include "memplan/tree/allocation_tree.hpp"

namespace memplan {

struct StepTree;

class LearnedSites {
 public:
  using Site = std::pair<const StepTree*, tree::NodeId>;

  void learn(Site site, const tree::AllocKey& key) { sites_.try_emplace(site, Entry{key}); }
  // The site is served from the plan again: its buffers still live are no longer counted.
  void forget(Site site);
  [[nodiscard]] std::size_t size() const noexcept { return sites_.size(); }

  // A buffer of a learned site is live past its step's end: in the pool, or in the arena (the
  // rogue that taught the site).
  void outlives(void* p, Site site, bool in_arena);
  // Every free of a buffer that outlived its step comes here (others are ignored): inside a step
  // of `running` after its event `depth`, or between steps (running == nullptr).
  void freed(void* p, const StepTree* running = nullptr, std::uint32_t depth = 0);

  void step_ended() noexcept;
  void step_begins(const StepTree* tree) noexcept;

  // At a begin_step of `tree`: a site of it that shows the period-two pattern now, with the event
  // until which its previous buffer lived into the last step (tree::kToStepEnd: past it).
  struct PeriodTwo {
    tree::NodeId node = tree::kNoNode;
    std::uint32_t hold_until = 0;
  };
  [[nodiscard]] std::optional<PeriodTwo> period_two_candidate(const StepTree* tree) const;

  // Calls room(key, count) for each site that needs `count` more free pool blocks of its size
  // than the pool's live buffers of the site and the frees expected before the next step leave.
  template <class Room>
  void for_each_missing_room(Room&& room) const {
    for (const auto& [site, e] : sites_) {
      if (const std::uint32_t count = missing_rooms(e); count > 0) room(e.key, count);
    }
  }

 private:
  struct Entry {
    tree::AllocKey key;
    std::uint32_t live = 0;      // buffers live past their step, in the pool or the arena
    std::uint32_t in_arena = 0;  // of those, the arena rogues (the oldest: frees take them first)
    std::uint32_t live_at_end = 0;
    std::uint32_t freed_between_steps = 0;  // measured at the last begin_step
    bool measured = false;
    // Since the last begin_step of the site's tree: its buffers that outlived a step, the frees
    // of such buffers and how long the latest of them lived into a step of the tree.
    std::uint32_t made = 0;
    std::uint32_t frees = 0;
    std::uint32_t hold = 0;
    std::uint32_t pattern_steps = 0;  // begin_steps in a row that saw the period-two pattern
    std::uint32_t pattern_hold = 0;   // the longest hold over them
  };
  struct Buffer {
    Site site;
    bool in_arena;
  };

  static std::uint32_t missing_rooms(const Entry& e) noexcept;

  std::map<Site, Entry> sites_;
  std::unordered_map<void*, Buffer> buffers_;
};

}  // namespace memplan
