// to_json(Stats): every counter under its own name with its exact value, the schema named and
// versioned, and well-formed JSON (checked by structure here; the memplan tool's tests parse it).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "memplan/arena/host_backend.hpp"
#include "memplan/runtime/compiler.hpp"
#include "memplan/runtime/stats_json.hpp"

namespace memplan::testing {
namespace {

// Braces balance and never close more than they opened; quotes pair up (escapes skipped).
bool well_nested(const std::string& json) {
  int depth = 0;
  std::size_t quotes = 0;
  bool escaped = false;
  for (const char ch : json) {
    if (escaped) {
      escaped = false;
      continue;
    }
    if (ch == '\\') escaped = true;
    if (ch == '"') ++quotes;
    if (quotes % 2 == 1) continue;
    if (ch == '{') ++depth;
    if (ch == '}' && --depth < 0) return false;
  }
  return depth == 0 && quotes % 2 == 0;
}

TEST(StatsJson, NamesEveryCounterWithItsValue) {
  arena::HostBackend backend({.commit = false});
  Compiler c(backend, {.reserve_bytes = std::size_t{1} << 30,
                       .pool_reserve_bytes = std::size_t{1} << 30,
                       .pool_chunk_bytes = std::size_t{2} << 20});
  for (const std::size_t second : {8192u, 8192u, 4096u}) {  // record, replay, break
    auto step = c.step("denoise");
    c.deallocate(c.allocate(4096));
    c.deallocate(c.allocate(second));
  }
  {
    auto pause = c.pause();
    (void)c.allocate(1000);  // 1024 B live in the pool
  }
  const Stats s = c.stats();
  const std::string json = to_json(s);
  EXPECT_TRUE(well_nested(json)) << json;
  EXPECT_EQ(json.front(), '{');
  for (const std::string& part : std::initializer_list<std::string>{
           R"("schema": "memplan.stats")", R"("schema_version": 1)", R"("steps_recorded": 2)",
           R"("steps_replayed": 1)", R"("breaks": 1)", R"("unknown_allocation": 1)",
           R"("range_occupied": 0)", R"("branches": 2)", R"("paused_allocations": 1)",
           R"("pool_live_bytes": 1024)", R"("arena_peak_live_bytes": 8192)",
           R"("peak_live_bytes": 8192)", R"("memory_budget_bytes": 0)",
           fmt::format(R"("peak_mapped_bytes": {})", s.peak_mapped_bytes),
           fmt::format(R"("memory_calls": {})", s.backend_calls.memory_calls()),
           fmt::format(R"("map": {})", s.backend_calls[arena::Call::Map])}) {
    EXPECT_NE(json.find(part), std::string::npos) << part << " not in " << json;
  }
}

TEST(ReportJson, HasTheStatsTheBranchesWithTheirPeakTagsTheBreaksAndTheRogues) {
  arena::HostBackend backend({.commit = false});
  Compiler c(backend, {.reserve_bytes = std::size_t{1} << 30,
                       .pool_reserve_bytes = std::size_t{1} << 30,
                       .pool_chunk_bytes = std::size_t{2} << 20});
  for (const std::size_t second : {8192u, 8192u, 4096u}) {
    auto step = c.step("den\"oise");  // a name that JSON must escape
    c.deallocate(c.allocate(4096, {}, "attention.q"));
    c.deallocate(c.allocate(second, {}, "mlp <up>"));
  }
  void* rogue = nullptr;
  {
    auto step = c.step("other");
    rogue = c.allocate(1024, {}, "cache");
  }
  const std::string json = c.report_json();
  EXPECT_TRUE(well_nested(json)) << json;
  for (
      const std::string& part : std::initializer_list<std::string>{
          R"({"schema": "memplan.report", "schema_version": 1, "stats": {"schema": "memplan.stats")",
          R"("name": "den\"oise", "runs": 3, "branches": [{"branch": 0, "events": 4,)",
          R"("gap_bytes": 0,)", R"("peak_tags": [{"tag": "mlp \u003cup\u003e", "bytes": 8192,)",
          R"("breaks": [{"step": 2, "step_name": "den\"oise", "scope": "den\"oise", "event": 2,)",
          R"("reason": "unknown allocation")",
          R"("live_rogues": [{"bytes": 1024, "arena_offset": )", R"("tag": "cache", "step": 3,)"}) {
    EXPECT_NE(json.find(part), std::string::npos) << part << " not in " << json;
  }
  c.deallocate(rogue);
}

}  // namespace
}  // namespace memplan::testing
