// Every shipped trace is planned and validated. Budgets are modest so that the suite stays fast
// under ASan; optimality is asserted only where the search needs a small fraction of its budget
// (minimalloc A, B, C, E, F, G, H, I, K take under a second in Release), and the budget there is
// generous.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "memplan/plan/csv.hpp"
#include "memplan/plan/lower_bound.hpp"
#include "memplan/plan/planner.hpp"
#include "solver_cases.hpp"

namespace memplan::plan {
namespace {

namespace fs = std::filesystem;

fs::path traces_dir() { return fs::path(MEMPLAN_TEST_DATA_DIR) / "traces"; }

std::vector<std::string> trace_names() {
  std::vector<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(traces_dir())) {
    if (entry.path().extension() == ".csv") {
      names.push_back(fs::relative(entry.path(), traces_dir()).string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

class TraceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TraceTest, PlansAndValidates) {
  const Problem problem = read_csv_file(traces_dir() / GetParam());
  const Solution solution = plan(problem, {.budget = std::chrono::milliseconds(150)});
  testing::expect_valid(problem, solution);
  EXPECT_EQ(solution.lower_bound, lower_bound(problem));
  EXPECT_GE(solution.arena_size, solution.lower_bound);
  if (!GetParam().starts_with("minimalloc/")) {
    EXPECT_LE(solution.ratio_to_bound(), 1.005) << "real-model traces stay within 0.5%";
  }
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Shipped, TraceTest, ::testing::ValuesIn(trace_names()), test_name);

TEST(Traces, AllShippedTracesAreFound) { EXPECT_EQ(trace_names().size(), 17u); }

class MinimallocOptimum : public ::testing::TestWithParam<std::string> {};

TEST_P(MinimallocOptimum, ReachesTheBound) {
  const Problem problem = read_csv_file(traces_dir() / "minimalloc" / GetParam());
  const Solution solution = plan(problem, {.budget = std::chrono::seconds(20)});
  testing::expect_valid(problem, solution);
  EXPECT_EQ(solution.arena_size, solution.lower_bound);
  EXPECT_TRUE(solution.proven_optimal);
}

INSTANTIATE_TEST_SUITE_P(Quick, MinimallocOptimum,
                         ::testing::Values("A.1048576.csv", "B.1048576.csv", "C.1048576.csv",
                                           "E.1048576.csv", "F.1048576.csv", "G.1048576.csv",
                                           "H.1048576.csv", "I.1048576.csv", "K.1048576.csv"),
                         test_name);

TEST(Traces, IreeOffsetsAsFixedAreKept) {
  // IREE's own placement, read as fixed offsets: the planner must keep every one of them.
  const Problem problem =
      read_csv_file(traces_dir() / "iree" / "iree_mobilenet.csv", {.offsets_are_fixed = true});
  const Solution solution = plan(problem);
  testing::expect_valid(problem, solution);
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    ASSERT_EQ(solution.offsets[i], problem.buffers[i].fixed_offset.value_or(0));
  }
}

}  // namespace
}  // namespace memplan::plan
