// The report as JSON: what report() prints, for programs (dashboards, CI checks, the memplan
// tool). One object; every byte count exact; names escaped by the core writer.
#include "compiler_impl.hpp"
#include "core/json_writer.hpp"
#include "memplan/runtime/stats_json.hpp"

namespace memplan {

std::string Compiler::Impl::report_json() const {
  std::string out;
  detail::JsonWriter o(out);
  o.begin_object();
  o.field("schema", "memplan.report");
  o.field("schema_version", 1);
  o.key("stats").raw(to_json(snapshot()));
  o.key("steps").begin_array();
  for (const auto& [name, g] : trees) {
    o.begin_object();
    o.field("name", name);
    o.field("runs", g->steps);
    o.key("branches").begin_array();
    for (std::size_t b = 0; b < g->tree.branch_count(); ++b) {
      const tree::Branch& br = g->tree.branch(static_cast<tree::BranchId>(b));
      o.begin_object();
      o.field("branch", std::uint64_t{b});
      o.field("events", std::uint64_t{g->tree.node(br.end).depth} - 1);  // the End node is none
      o.field("plan_bytes", br.arena_bytes);
      o.field("lower_bound_bytes", br.lower_bound);
      o.field("gap_bytes", br.arena_bytes - br.lower_bound);
      o.field("algorithm", br.algorithm);
      o.field("proven_optimal", br.proven_optimal);
      o.key("peak_tags").begin_array();
      for (const TagShare& share : peak_tags(branch_trace(name, b))) {
        o.begin_object();
        o.field("tag", share.tag);
        o.field("bytes", share.bytes);
        o.field("share", share.share);
        o.end_object();
      }
      o.end_array();
      o.end_object();
    }
    o.end_array();
    o.end_object();
  }
  o.end_array();
  o.key("breaks").begin_array();
  for (const BreakRecord& b : break_log) {
    o.begin_object();
    o.field("step", b.step);
    o.field("step_name", b.step_name);
    o.field("scope", b.scope);
    o.field("event", b.event);
    o.field("reason", to_string(b.reason));
    o.field("expected", b.expected);
    o.field("came", b.came);
    o.end_object();
  }
  o.end_array();
  o.key("live_rogues").begin_array();
  for (const auto& [p, r] : rogues.all()) {
    const auto tag = tag_names.find(r.tag);
    o.begin_object();
    o.field("bytes", r.size);
    o.field("arena_offset", r.offset);
    o.field("tag", tag == tag_names.end() ? std::string_view() : std::string_view(tag->second));
    o.field("step", r.step);
    o.field("step_name", r.step_name);
    o.end_object();
  }
  o.end_array();
  o.end_object();
  return out;
}

}  // namespace memplan
