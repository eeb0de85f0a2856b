// Stats written as JSON with fmt: every value is an integer and every key a fixed identifier, so
// no escaping is needed and no JSON library enters the library's dependencies.
#include "memplan/runtime/stats_json.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <string_view>

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

class ObjectWriter {
 public:
  explicit ObjectWriter(std::string& out) : out_(out) { out_ += '{'; }
  ~ObjectWriter() { out_ += '}'; }
  ObjectWriter(const ObjectWriter&) = delete;
  ObjectWriter& operator=(const ObjectWriter&) = delete;

  void key(std::string_view name) {
    if (!first_) out_ += ", ";
    first_ = false;
    fmt::format_to(std::back_inserter(out_), "\"{}\": ", name);
  }
  void field(std::string_view name, std::uint64_t value) {
    key(name);
    fmt::format_to(std::back_inserter(out_), "{}", value);
  }
  void field(std::string_view name, std::string_view text) {  // an identifier: no escaping
    key(name);
    fmt::format_to(std::back_inserter(out_), "\"{}\"", text);
  }

 private:
  std::string& out_;
  bool first_ = true;
};

}  // namespace

std::string to_json(const Stats& s) {
  std::string out;
  {
    ObjectWriter o(out);
    o.field("schema", "memplan.stats");
    o.field("schema_version", std::uint64_t{kStatsSchemaVersion});
    o.field("steps_recorded", s.steps_recorded);
    o.field("steps_replayed", s.steps_replayed);
    o.field("steps_aborted", s.steps_aborted);
    o.field("steps_dynamic", s.steps_dynamic);
    o.field("breaks", s.breaks);
    o.key("breaks_by_reason");
    {
      ObjectWriter reasons(out);
      for (std::size_t r = 0; r < kBreakReasons; ++r) {
        reasons.field(json_key(static_cast<BreakReason>(r)), s.breaks_by_reason[r]);
      }
    }
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
    o.field("planned_peak_bytes", s.planned_peak_bytes);
    o.field("lower_bound_bytes", s.lower_bound_bytes);
    o.field("mapped_bytes", s.mapped_bytes);
    o.field("reserved_bytes", s.reserved_bytes);
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
    o.key("backend_calls");
    {
      ObjectWriter calls(out);
      for (std::size_t c = 0; c < arena::kCallKinds; ++c) {
        calls.field(arena::to_string(static_cast<arena::Call>(c)), s.backend_calls.n[c]);
      }
      calls.field("memory_calls", s.backend_calls.memory_calls());
    }
  }
  return out;
}

}  // namespace memplan
