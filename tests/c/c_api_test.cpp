// The C API (memplan/c/memplan_torch.h) on the host library, as a C caller sees it: status codes,
// the last error naming the numbers, replay without backend calls, and bad input that leaves the
// plan intact.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "memplan/c/memplan_torch.h"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// Each test takes its own device: compilers live as long as the process.
int fresh_device() {
  static int next = 1;
  memplan_torch_options options;
  memplan_torch_default_options(&options);
  options.reserve_bytes = options.pool_reserve_bytes = 256 * kMiB;
  options.pool_chunk_bytes = 2 * kMiB;
  EXPECT_EQ(memplan_torch_configure(&options), MEMPLAN_OK) << memplan_torch_last_error();
  EXPECT_EQ(memplan_torch_init(next), MEMPLAN_OK) << memplan_torch_last_error();
  return next++;
}

std::string last_error() { return memplan_torch_last_error(); }

// One step: three buffers alive together, then freed. Returns the pointers.
std::vector<void*> run_step(int device, memplan_torch_step_result* result) {
  EXPECT_EQ(memplan_torch_begin_step(device, "denoise"), MEMPLAN_OK) << last_error();
  std::vector<void*> pointers;
  for (std::size_t mib : {4, 1, 3})
    pointers.push_back(memplan_torch_alloc(mib * kMiB, device, nullptr));
  for (void* p : pointers) memplan_torch_free(p, 0, device, nullptr);
  EXPECT_EQ(memplan_torch_end_step(device, result), MEMPLAN_OK) << last_error();
  return pointers;
}

std::string backend_calls(int device) {
  const std::string json = memplan_torch_stats_json(device);
  return json.substr(json.find("\"backend_calls\""));
}

TEST(CApi, RecordsThenReplaysWithoutBackendCalls) {
  const int device = fresh_device();
  memplan_torch_step_result result{};
  const auto first = run_step(device, &result);
  EXPECT_EQ(result.kind, 1);
  EXPECT_EQ(result.branch, 0);
  const auto second = run_step(device, &result);
  EXPECT_EQ(result.kind, 0);
  EXPECT_EQ(result.break_reason, -1);
  EXPECT_EQ(result.events, 6U);
  const std::string calls = backend_calls(device);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(run_step(device, &result), second);
  EXPECT_EQ(backend_calls(device), calls);
  EXPECT_NE(std::string(memplan_torch_report(device)).find("denoise"), std::string::npos);
}

TEST(CApi, SizeZeroIsNullAndFreeOfNullIsNothing) {
  const int device = fresh_device();
  const auto failures = memplan_torch_callback_failures();
  EXPECT_EQ(memplan_torch_alloc(0, device, nullptr), nullptr);
  memplan_torch_free(nullptr, 0, device, nullptr);
  EXPECT_EQ(memplan_torch_callback_failures(), failures);
}

TEST(CApi, ControlCallOnAnUninitialisedDevice) {
  EXPECT_EQ(memplan_torch_initialised(0), 0);
  EXPECT_EQ(memplan_torch_begin_step(0, "denoise"), MEMPLAN_E_NOT_INITIALISED);
  EXPECT_EQ(last_error(),
            "memplan_torch_begin_step(device=0): device 0 has no memplan compiler (call "
            "memplan_torch_init(0) or allocate on it first)");
  EXPECT_EQ(memplan_torch_stats_json(0), nullptr);
  EXPECT_EQ(memplan_torch_init(MEMPLAN_TORCH_MAX_DEVICES), MEMPLAN_E_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("device 64 is out of range"), std::string::npos);
}

TEST(CApi, PlanEpochCountsWindowMovesAndCarriedOutputs) {
  const int device = fresh_device();
  memplan_torch_plan_epoch epoch{7, 7};
  ASSERT_EQ(memplan_torch_plan_epoch_of(device, &epoch), MEMPLAN_OK) << last_error();
  EXPECT_EQ(epoch.window_moves, 0U);
  EXPECT_EQ(epoch.carried_outputs, 0U);
  memplan_torch_step_result result{};
  run_step(device, &result);
  // A buffer kept past a step is a rogue over the plan: the next step's plans move clear of it.
  ASSERT_EQ(memplan_torch_begin_step(device, "denoise"), MEMPLAN_OK);
  void* rogue = memplan_torch_alloc(4 * kMiB, device, nullptr);
  ASSERT_EQ(memplan_torch_end_step(device, &result), MEMPLAN_OK);
  run_step(device, &result);
  ASSERT_EQ(memplan_torch_plan_epoch_of(device, &epoch), MEMPLAN_OK) << last_error();
  EXPECT_GE(epoch.window_moves, 1U);
  const std::string json = memplan_torch_stats_json(device);
  EXPECT_NE(json.find("\"window_moves\": " + std::to_string(epoch.window_moves)), std::string::npos)
      << json;
  memplan_torch_free(rogue, 0, device, nullptr);

  EXPECT_EQ(memplan_torch_plan_epoch_of(device, nullptr), MEMPLAN_E_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("the epoch is NULL"), std::string::npos) << last_error();
  EXPECT_EQ(memplan_torch_plan_epoch_of(0, &epoch), MEMPLAN_E_NOT_INITIALISED);
}

TEST(CApi, StepEndedTwice) {
  const int device = fresh_device();
  ASSERT_EQ(memplan_torch_begin_step(device, "denoise"), MEMPLAN_OK);
  ASSERT_EQ(memplan_torch_end_step(device, nullptr), MEMPLAN_OK);
  EXPECT_EQ(memplan_torch_end_step(device, nullptr), MEMPLAN_E_INVALID_STATE);
  EXPECT_EQ(
      last_error().rfind("memplan_torch_end_step(device=" + std::to_string(device) + "): ", 0), 0U)
      << last_error();
}

TEST(CApi, ForeignAndDoubleFreesAreReportedAndLeaveThePlanIntact) {
  const int device = fresh_device();
  memplan_torch_step_result result{};
  run_step(device, &result);
  const auto pointers = run_step(device, &result);
  const auto failures = memplan_torch_callback_failures();

  int local = 0;
  memplan_torch_free(&local, 4, device, nullptr);
  EXPECT_EQ(memplan_torch_callback_failures(), failures + 1);
  EXPECT_EQ(memplan_torch_last_callback_status(), MEMPLAN_E_FOREIGN_POINTER);
  EXPECT_NE(std::string(memplan_torch_last_callback_error()).find("size=4"), std::string::npos);

  memplan_torch_free(pointers[0], 4 * kMiB, device, nullptr);
  EXPECT_EQ(memplan_torch_callback_failures(), failures + 2);
  EXPECT_EQ(memplan_torch_last_callback_status(), MEMPLAN_E_DOUBLE_FREE);

  EXPECT_EQ(run_step(device, &result), pointers);
  EXPECT_EQ(result.kind, 0);
}

TEST(CApi, AFailedFreeOnAnotherThreadIsSeenFromThisOne) {
  const int device = fresh_device();
  void* p = memplan_torch_alloc(kMiB, device, nullptr);
  const auto failures = memplan_torch_callback_failures();
  memplan_torch_clear_error();
  std::thread other([&] {
    memplan_torch_free(p, kMiB, device, nullptr);
    memplan_torch_free(p, kMiB, device, nullptr);  // PyTorch's free thread, a double free
  });
  other.join();
  EXPECT_EQ(memplan_torch_callback_failures(), failures + 1);
  EXPECT_EQ(memplan_torch_last_callback_status(), MEMPLAN_E_DOUBLE_FREE);
  EXPECT_NE(std::string(memplan_torch_last_callback_error()).find("size=1048576"),
            std::string::npos);
  EXPECT_EQ(last_error(), "");  // this thread's last error is its own
}

TEST(CApi, WritesARecordedBranchAsAPlannerProblem) {
  const int device = fresh_device();
  memplan_torch_step_result result{};
  run_step(device, &result);
  const auto pointers = run_step(device, &result);  // the plan's addresses
  const auto path = std::filesystem::temp_directory_path() /
                    ("memplan_c_api_branch_" + std::to_string(::getpid()) + ".csv");
  ASSERT_EQ(memplan_torch_write_branch_trace(device, "denoise", 0, path.c_str()), MEMPLAN_OK)
      << last_error();
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::filesystem::remove(path);
  ASSERT_EQ(lines.size(), 4U);  // the header and the step's three buffers
  EXPECT_EQ(lines[0].rfind("id,lower,upper,size,alignment,offset", 0), 0U) << lines[0];
  EXPECT_NE(lines[1].find(",4194304,"), std::string::npos) << lines[1];

  EXPECT_EQ(memplan_torch_write_branch_trace(device, "denoise", 1, path.c_str()),
            MEMPLAN_E_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("branch 1"), std::string::npos) << last_error();
  EXPECT_EQ(memplan_torch_write_branch_trace(device, "vae", 0, path.c_str()),
            MEMPLAN_E_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("vae"), std::string::npos) << last_error();
  EXPECT_EQ(memplan_torch_write_branch_trace(device, "denoise", -1, path.c_str()),
            MEMPLAN_E_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("branch -1 is negative"), std::string::npos) << last_error();
  EXPECT_EQ(memplan_torch_write_branch_trace(device, "denoise", 0, nullptr),
            MEMPLAN_E_INVALID_ARGUMENT);
  EXPECT_EQ(memplan_torch_write_branch_trace(device, "denoise", 0, "branch.txt"),
            MEMPLAN_E_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("branch.txt"), std::string::npos) << last_error();
  EXPECT_FALSE(std::filesystem::exists("branch.txt"));
  EXPECT_EQ(run_step(device, &result), pointers);  // the plan is untouched
  EXPECT_EQ(result.kind, 0);
}

TEST(CApi, PlanBudgetIsAnOption) {
  memplan_torch_options options;
  memplan_torch_default_options(&options);
  EXPECT_EQ(options.plan_budget_ms, 200);
  memplan_torch_options negative = options;
  negative.plan_budget_ms = -5;
  EXPECT_EQ(memplan_torch_configure(&negative), MEMPLAN_E_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("plan_budget_ms -5 is negative"), std::string::npos) << last_error();
  options.plan_budget_ms = 1000;
  ASSERT_EQ(memplan_torch_configure(&options), MEMPLAN_OK) << last_error();
  memplan_torch_options now;
  memplan_torch_default_options(&now);
  EXPECT_EQ(now.plan_budget_ms, 200);  // the defaults, not the configured options
}

TEST(CApi, SharingThePoolChunkIsTheDefaultAndYieldsToAnotherPoolChunk) {
  memplan_torch_options options;
  memplan_torch_default_options(&options);
  EXPECT_EQ(options.share_pool_chunk, 1);
  EXPECT_EQ(options.pool_chunk_bytes, options.chunk_bytes);  // one size: the lent chunk is both's
  memplan_torch_options other_pool_chunk{};                  // zeros: the defaults
  other_pool_chunk.log_level = -1;
  other_pool_chunk.chunk_bytes = 2 << 20;
  other_pool_chunk.pool_chunk_bytes = 4 << 20;
  EXPECT_EQ(memplan_torch_configure(&other_pool_chunk), MEMPLAN_OK) << last_error();  // off
  other_pool_chunk.share_pool_chunk = 1;  // asked for: refused, with both sizes
  EXPECT_EQ(memplan_torch_configure(&other_pool_chunk), MEMPLAN_E_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("share_pool_chunk needs pool_chunk_bytes equal to chunk_bytes "
                              "(2097152 B), got 4194304 B"),
            std::string::npos)
      << last_error();
  other_pool_chunk.share_pool_chunk = 2;
  EXPECT_EQ(memplan_torch_configure(&other_pool_chunk), MEMPLAN_E_INVALID_ARGUMENT);
  memplan_torch_options defaults{};
  defaults.log_level = -1;
  ASSERT_EQ(memplan_torch_configure(&defaults), MEMPLAN_OK) << last_error();
}

// A policy as a C caller writes one: the fields it sets named, query_blocks_per_list left out.
memplan_torch_attention_policy c_policy(int mode) {
  return {.mode = mode,
          .tau = 1.5f,
          .keep_percent = 10.0f,
          .max_keep_percent = 100.0f,
          .window_start = 0.2,
          .window_end = 1.0,
          .coarse_gate = 1.0f};
}

TEST(CApi, AttentionIsUnsupportedInTheHostLibrary) {
  memplan_torch_attention_policy policy = c_policy(1);
  EXPECT_GT(memplan_torch_attention_workspace_bytes(1, 8192, 24, 128, &policy), 0);
  EXPECT_EQ(memplan_torch_attention(1, nullptr, nullptr, nullptr, nullptr, 1, 8192, 24, 128,
                                    &policy, 0.5, nullptr),
            MEMPLAN_E_UNSUPPORTED);
  EXPECT_EQ(memplan_torch_attention_workspace_bytes(1, 8192, 24, 128, nullptr),
            MEMPLAN_E_INVALID_ARGUMENT);
}

TEST(CApi, AttentionPolicyTakesOneOrTwoQueryBlocksPerList) {
  memplan_torch_attention_policy policy = c_policy(2);  // top-k
  // Left out of the initialiser, the field is 0: the default, 1.
  const int64_t unset = memplan_torch_attention_workspace_bytes(1, 8192, 24, 128, &policy);
  policy.query_blocks_per_list = 1;
  EXPECT_EQ(memplan_torch_attention_workspace_bytes(1, 8192, 24, 128, &policy), unset);
  policy.query_blocks_per_list = 2;
  EXPECT_GT(memplan_torch_attention_workspace_bytes(1, 8192, 24, 128, &policy), unset);
  policy.query_blocks_per_list = 3;
  EXPECT_EQ(memplan_torch_attention_workspace_bytes(1, 8192, 24, 128, &policy),
            MEMPLAN_E_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("query_blocks_per_list = 3 is not 1 or 2"), std::string::npos)
      << last_error();
}

}  // namespace
