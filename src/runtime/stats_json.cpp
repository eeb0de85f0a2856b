// Stats written as JSON with the core writer: every counter under its field's name, bytes exact.
#include "memplan/runtime/stats_json.hpp"

#include "core/json_writer.hpp"

namespace memplan {
namespace {

std::string_view json_key(BreakReason reason) noexcept {
  switch (reason) {
    case BreakReason::UnknownAllocation:
      return "unknown_allocation";
    case BreakReason::RangeOccupied:
      return "range_occupied";
    case BreakReason::UnexpectedEnd:
      return "unexpected_end";
  }
  return "unknown";
}

}  // namespace

std::string to_json(const Stats& s) {
  std::string out;
  detail::JsonWriter o(out);
  o.begin_object();
  o.field("schema", "memplan.stats");
  o.field("schema_version", kStatsSchemaVersion);
  o.field("steps_recorded", s.steps_recorded);
  o.field("steps_replayed", s.steps_replayed);
  o.field("steps_aborted", s.steps_aborted);
  o.field("steps_dynamic", s.steps_dynamic);
  o.field("breaks", s.breaks);
  o.key("breaks_by_reason").begin_object();
  for (std::size_t r = 0; r < kBreakReasons; ++r) {
    o.field(json_key(static_cast<BreakReason>(r)), s.breaks_by_reason[r]);
  }
  o.end_object();
  o.field("branches", s.branches);
  o.field("replayed_allocations", s.replayed_allocations);
  o.field("recorded_allocations", s.recorded_allocations);
  o.field("paused_allocations", s.paused_allocations);
  o.field("learned_site_allocations", s.learned_site_allocations);
  o.field("frees_out_of_order", s.frees_out_of_order);
  o.field("rogues", s.rogues);
  o.field("rogue_bytes", s.rogue_bytes);
  o.field("live_rogues", s.live_rogues);
  o.field("live_rogue_bytes", s.live_rogue_bytes);
  o.field("learned_rogue_sites", s.learned_rogue_sites);
  o.field("forgotten_rogue_sites", s.forgotten_rogue_sites);
  o.field("window_moves", s.window_moves);
  o.field("period_two_outputs", s.period_two_outputs);
  o.field("period_two_fallbacks", s.period_two_fallbacks);
  o.field("carried_outputs", s.carried_outputs);
  o.field("live_carried_outputs", s.live_carried_outputs);
  o.field("live_carried_bytes", s.live_carried_bytes);
  o.field("planned_peak_bytes", s.planned_peak_bytes);
  o.field("lower_bound_bytes", s.lower_bound_bytes);
  o.field("mapped_bytes", s.mapped_bytes);
  o.field("reserved_bytes", s.reserved_bytes);
  o.field("pool_lent_bytes", s.pool_lent_bytes);
  o.field("pool_mapped_bytes", s.pool_mapped_bytes);
  o.field("pool_live_bytes", s.pool_live_bytes);
  o.field("arena_live_bytes", s.arena_live_bytes);
  o.field("arena_peak_live_bytes", s.arena_peak_live_bytes);
  o.field("pool_peak_live_bytes", s.pool_peak_live_bytes);
  o.field("peak_live_rogue_bytes", s.peak_live_rogue_bytes);
  o.field("live_bytes", s.live_bytes);
  o.field("peak_live_bytes", s.peak_live_bytes);
  o.field("peak_mapped_bytes", s.peak_mapped_bytes);
  o.field("memory_budget_bytes", s.memory_budget_bytes);
  o.key("backend_calls").begin_object();
  for (std::size_t c = 0; c < arena::kCallKinds; ++c) {
    o.field(arena::to_string(static_cast<arena::Call>(c)), s.backend_calls.n[c]);
  }
  o.field("memory_calls", s.backend_calls.memory_calls());
  o.end_object();
  o.end_object();
  return out;
}

}  // namespace memplan
