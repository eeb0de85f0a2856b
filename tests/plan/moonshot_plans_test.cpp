// The plans below MiniMalloc's best-known capacities (issue 17's moonshot), kept in
// data/plans/minimalloc/<trace>.<capacity>.csv: each must be a valid plan of the shipped trace
// of that name, its buffers unchanged, within the capacity in its name. Checked by the
// validator and by the independent plan checker; the search that found them (minutes of
// exact_search questions) is in docs/planner.md, not here.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "memplan/plan/csv.hpp"
#include "solver_cases.hpp"

namespace memplan::plan {
namespace {

namespace fs = std::filesystem;

TEST(MoonshotPlans, AreValidPlansOfTheShippedTracesWithinTheirCapacity) {
  const fs::path data(MEMPLAN_TEST_DATA_DIR);
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(data / "plans" / "minimalloc")) {
    if (entry.path().extension() != ".csv") continue;
    const std::string name = entry.path().stem().string();  // e.g. "D.1022976"
    SCOPED_TRACE(name);
    const std::string trace = name.substr(0, name.find('.'));
    const Bytes capacity = std::stoll(name.substr(name.find('.') + 1));
    const Problem problem =
        read_csv_file(data / "traces" / "minimalloc" / (trace + ".1048576.csv"));
    // Read with the offsets as fixed: check_problem then also rejects two that collide.
    const Problem placed = read_csv_file(entry.path(), {.offsets_are_fixed = true});
    std::map<std::string, const Buffer*> by_id;
    for (const Buffer& b : placed.buffers) by_id[b.id] = &b;
    ASSERT_EQ(by_id.size(), problem.buffers.size());
    Solution solution;
    for (const Buffer& b : problem.buffers) {
      const auto it = by_id.find(b.id);
      ASSERT_NE(it, by_id.end()) << b.id;
      EXPECT_EQ(it->second->lower, b.lower);
      EXPECT_EQ(it->second->upper, b.upper);
      EXPECT_EQ(it->second->size, b.size);
      ASSERT_TRUE(it->second->fixed_offset.has_value());
      solution.offsets.push_back(*it->second->fixed_offset);
    }
    solution.arena_size = arena_size(problem, solution.offsets);
    testing::expect_valid(problem, solution);
    EXPECT_LE(solution.arena_size, capacity);
    ++checked;
  }
  EXPECT_GE(checked, 2);  // D and J
}

}  // namespace
}  // namespace memplan::plan
