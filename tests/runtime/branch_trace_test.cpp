// A recorded branch exported: the planner problem of its path, the plan the compiler made for it,
// its tags; re-planned it gives the plan's size back; its peak is named by tag; written as CSV it
// reads back, as a picture it draws; asking for a step or branch that does not exist is named.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "memplan/plan/csv.hpp"
#include "memplan/plan/planner.hpp"
#include "memplan/plan/validator.hpp"
#include "step_program.hpp"

namespace memplan::testing {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// A weights cache lives through the step; the attention scores (twice its size) come and go
// while it lives; the output comes after the scores are freed. The peak is cache + scores.
Program attention_step() {
  return {alloc(1, 1 * kMiB, "weights.cache"),
          alloc(2, 2 * kMiB, "attention.scores"),
          free_(2),
          alloc(3, kMiB / 2, "attention.out"),
          free_(1),
          free_(3)};
}

TEST(BranchTrace, ARecordedBranchIsItsPathWithThePlanAndTheTags) {
  Harness h;
  h.run_step(attention_step());
  h.run_step(attention_step());
  ASSERT_EQ(h.compiler().step_branches(),
            (std::vector<std::pair<std::string, std::size_t>>{{"denoise", 1}}));
  const BranchTrace t = h.compiler().branch_trace("denoise", 0);
  ASSERT_EQ(t.problem.buffers.size(), 3u);
  EXPECT_EQ(t.tags,
            (std::vector<std::string>{"weights.cache", "attention.scores", "attention.out"}));
  EXPECT_TRUE(plan::find_violations(t.problem, t.offsets).empty());
  EXPECT_EQ(plan::arena_size(t.problem, t.offsets), t.arena_bytes);
  EXPECT_EQ(t.arena_bytes, Bytes{3} << 20);
  EXPECT_EQ(t.lower_bound, Bytes{3} << 20);
  // Re-planned, as `memplan plan` would: the plan's size again.
  EXPECT_EQ(plan::plan(t.problem).arena_size, t.arena_bytes);
}

TEST(BranchTrace, ThePeakIsNamedByTagInTheTraceAndInTheReport) {
  Harness h;
  h.run_step(attention_step());
  const std::vector<TagShare> peak = peak_tags(h.compiler().branch_trace("denoise", 0));
  ASSERT_EQ(peak.size(), 2u);
  EXPECT_EQ(peak[0].tag, "attention.scores");
  EXPECT_EQ(peak[0].bytes, Bytes{2} << 20);
  EXPECT_NEAR(peak[0].share, 2.0 / 3.0, 1e-12);
  EXPECT_EQ(peak[1].tag, "weights.cache");
  EXPECT_NE(h.compiler().report().find(
                "peak: attention.scores 2.00 MiB (67%), weights.cache 1.00 MiB (33%)"),
            std::string::npos)
      << h.compiler().report();
}

TEST(BranchTrace, WrittenAsCsvOrJsonItReadsBackAndAsAPictureItDraws) {
  Harness h;
  h.run_step(attention_step());
  const BranchTrace t = h.compiler().branch_trace("denoise", 0);
  const auto dir =
      std::filesystem::temp_directory_path() /
      ("memplan_branch_trace_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  write_branch_trace(dir / "branch.csv", t);
  const plan::CsvProblem back = plan::read_csv_file_with_lines(dir / "branch.csv");
  EXPECT_EQ(back.offsets, t.offsets);
  EXPECT_EQ(back.tags, t.tags);
  write_branch_trace(dir / "branch.json", t);
  std::ifstream json(dir / "branch.json");
  std::stringstream json_text;
  json_text << json.rdbuf();
  // One buffer a line, with its offset and tag (the tool's tests read such files back).
  EXPECT_EQ(
      json_text.str().rfind(R"({"schema": "memplan.trace", "schema_version": 1, "buffers": [)", 0),
      0u);
  for (std::size_t i = 0; i < t.offsets.size(); ++i) {
    EXPECT_NE(json_text.str().find(fmt::format(R"("offset": {})", t.offsets[i])),
              std::string::npos);
  }
  EXPECT_NE(json_text.str().find(R"("tag": ")" + t.tags[0] + "\""), std::string::npos)
      << json_text.str();
  write_branch_trace(dir / "branch.svg", t);
  std::ifstream svg(dir / "branch.svg");
  std::stringstream text;
  text << svg.rdbuf();
  EXPECT_NE(text.str().find("branch 0: 3 buffers, plan 3.00 MiB (lower bound 3.00 MiB)"),
            std::string::npos);
  EXPECT_THROW(write_branch_trace(dir / "branch.png", t), InvalidArgument);
  std::filesystem::remove_all(dir);
}

TEST(BranchTrace, AStepOrBranchThatDoesNotExistIsNamed) {
  Harness h;
  h.run_step(attention_step());
  try {
    (void)h.compiler().branch_trace("encode", 0);
    ADD_FAILURE() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "branch_trace: no step named 'encode' was run");
  }
  try {
    (void)h.compiler().branch_trace("denoise", 1);
    ADD_FAILURE() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "branch_trace: step 'denoise' has no branch 1 (its branches: 0..0)");
  }
}

}  // namespace
}  // namespace memplan::testing
