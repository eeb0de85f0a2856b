// Misuse: each misuse gets its own named outcome and leaves the compiler usable.
#include <cstdlib>

#include "memplan/arena/pointer_errors.hpp"
#include "step_program.hpp"

namespace memplan::testing {
namespace {

const Program kProgram{alloc(1, 4096), alloc(2, 8192), free_(1),
                       alloc(3, 4096), free_(2),       free_(3)};

TEST(Misuse, DoubleFreeIsNamedAndChangesNothing) {
  Harness h;
  for (int s = 0; s < 3; ++s) {
    auto step = h.compiler().step("denoise");
    void* p = h.compiler().allocate(4096);
    h.compiler().deallocate(p);
    EXPECT_THROW(h.compiler().deallocate(p), arena::DoubleFree);
  }
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.breaks, 0u);
  EXPECT_EQ(st.steps_replayed, 2u);
}

TEST(Misuse, ForeignPointersAreNamed) {
  Harness h;
  int on_stack = 0;
  void* on_heap = std::malloc(64);
  EXPECT_THROW(h.compiler().deallocate(&on_stack), arena::ForeignPointer);
  {
    auto step = h.compiler().step("denoise");
    EXPECT_THROW(h.compiler().deallocate(on_heap), arena::ForeignPointer);
  }
  std::free(on_heap);
  h.compiler().deallocate(nullptr);  // ignored, as free(nullptr)
  h.run_step(kProgram);
  EXPECT_EQ(h.compiler().stats().steps_recorded, 2u);  // the empty step, then kProgram
}

// A pointer inside a live buffer is not a double free: it is not the start of an allocation.
TEST(Misuse, InteriorPointersAreForeignNotDoubleFrees) {
  Harness h;
  void* rogue = nullptr;
  for (int s = 0; s < 3; ++s) {  // record, then replay: both paths name it the same way
    auto step = h.compiler().step("denoise");
    auto* p = static_cast<std::byte*>(h.compiler().allocate(4096));
    EXPECT_THROW(h.compiler().deallocate(p + 256), arena::ForeignPointer) << "step " << s;
    h.compiler().deallocate(p);
    EXPECT_THROW(h.compiler().deallocate(p), arena::DoubleFree) << "step " << s;
  }
  {
    auto step = h.compiler().step("other");
    rogue = h.compiler().allocate(8192);  // live at the end: a rogue in the planned arena
  }
  EXPECT_THROW(h.compiler().deallocate(static_cast<std::byte*>(rogue) + 4096),
               arena::ForeignPointer);
  h.compiler().deallocate(rogue);
  EXPECT_EQ(h.compiler().stats().live_rogues, 0u);
  EXPECT_EQ(h.compiler().stats().steps_replayed, 2u);
}

// A scope opened before a step outlives it; scopes opened inside the step close with it.
TEST(Misuse, AScopeOpenedOutsideAStepSurvivesTheStep) {
  Harness h;
  h.compiler().begin_scope("model");
  h.run_step(kProgram);
  {
    auto step = h.compiler().step("denoise");
    h.compiler().begin_scope("block");       // left open: closed with the step
    void* p = h.compiler().allocate(12345);  // not on record: a break, logged with its scope
    h.compiler().deallocate(p);
  }
  const std::vector<BreakRecord> breaks = h.compiler().breaks();
  ASSERT_FALSE(breaks.empty());
  EXPECT_EQ(breaks.front().scope, "denoise/model/block");
  EXPECT_NO_THROW(h.compiler().end_scope());  // "model" is still open
  EXPECT_THROW(h.compiler().end_scope(), InvalidState);
}

TEST(Misuse, ZeroAbsurdAndMisalignedRequestsAreInvalidArguments) {
  Harness h;
  auto step = h.compiler().step("denoise");
  EXPECT_THROW((void)h.compiler().allocate(0), InvalidArgument);
  EXPECT_THROW((void)h.compiler().allocate(~std::size_t{0}), InvalidArgument);
  EXPECT_THROW((void)h.compiler().allocate(64, {}, {}, 3), InvalidArgument);
  void* p = h.compiler().allocate(64, {}, {}, 4096);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u);
  h.compiler().deallocate(p);
}

TEST(Misuse, OutOfMemoryNamesTheNumbersAndTheStepGoesOn) {
  CompilerOptions options = Harness::small_options();
  options.reserve_bytes = std::size_t{64} << 20;
  Harness h(options);
  auto step = h.compiler().step("denoise");
  try {
    (void)h.compiler().allocate(std::size_t{1} << 30);
    ADD_FAILURE() << "no OutOfMemory";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("1073741824 B"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("67108864 reserved"), std::string::npos) << e.what();
  }
  h.compiler().deallocate(h.compiler().allocate(4096));
}

TEST(Misuse, ExceptionMidRecordingAbortsTheStepAndKeepsItsBuffers) {
  Harness h;
  try {
    auto step = h.compiler().step("denoise");
    h.allocate(1, 4096);
    h.allocate(2, 8192);
    throw std::runtime_error("model failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(h.compiler().in_step());
  Stats st = h.compiler().stats();
  EXPECT_EQ(st.steps_aborted, 1u);
  EXPECT_EQ(st.live_rogues, 2u);
  h.expect_all_intact();
  h.release(1);
  h.release(2);
  for (int s = 0; s < 3; ++s) h.run_step(kProgram);
  st = h.compiler().stats();
  EXPECT_EQ(st.steps_recorded, 1u);  // the aborted recording left nothing in the tree
  EXPECT_EQ(st.steps_replayed, 2u);
  EXPECT_EQ(st.breaks, 0u);
}

TEST(Misuse, ExceptionMidReplayKeepsBuffersAndLaterStepsReplay) {
  Harness h;
  h.run_step(kProgram);
  try {
    auto step = h.compiler().step("denoise");
    h.allocate(1, 4096);
    throw std::runtime_error("model failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(h.compiler().stats().steps_aborted, 1u);
  h.expect_all_intact();
  h.release(1);
  for (int s = 0; s < 3; ++s) h.run_step(kProgram);
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.breaks, 0u);
  EXPECT_EQ(st.steps_replayed, 3u);
  EXPECT_EQ(st.learned_rogue_sites, 0u);  // an aborted step teaches nothing
}

TEST(Misuse, APauseLeftOpenKeepsTheStepOpen) {
  Harness h;
  h.compiler().begin_step("denoise");
  h.compiler().begin_pause();
  EXPECT_THROW(h.compiler().end_step(), InvalidState);
  EXPECT_TRUE(h.compiler().in_step());
  h.compiler().end_pause();
  h.compiler().end_step();
  EXPECT_THROW(h.compiler().end_pause(), InvalidState);
  EXPECT_THROW(h.compiler().end_step(), InvalidState);
  EXPECT_THROW(h.compiler().end_scope(), InvalidState);
}

TEST(Misuse, APauseOpenedOutsideStepsSpansThem) {
  Harness h;
  auto pause = h.compiler().pause();
  h.run_step(kProgram);
  h.run_step(kProgram);
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.paused_allocations, 6u);
  EXPECT_EQ(st.steps_recorded + st.steps_replayed, 2u);
  EXPECT_EQ(st.replayed_allocations, 0u);
}

TEST(Misuse, StepsDoNotNest) {
  Harness h;
  auto step = h.compiler().step("denoise");
  EXPECT_THROW(h.compiler().begin_step("inner"), InvalidState);
}

TEST(Misuse, BranchCapTurnsRunawayDivergenceIntoANamedError) {
  CompilerOptions options = Harness::small_options();
  options.branch_cap = 2;
  Harness h(options);
  h.run_step(dit_step(2, 1024));
  h.run_step(dit_step(2, 2048));
  {
    auto step = h.compiler().step("denoise");
    EXPECT_THROW((void)h.compiler().allocate(12345), BranchLimitExceeded);
    h.allocate(1, 12345);  // the step goes on, served dynamically
    h.release(1);
  }
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.branches, 2u);
  EXPECT_EQ(st.steps_dynamic, 1u);
}

TEST(Misuse, BranchCapWithDynamicFallbackServesTheStep) {
  CompilerOptions options = Harness::small_options();
  options.branch_cap = 1;
  options.over_cap = OverCapPolicy::Dynamic;
  Harness h(options);
  h.run_step(dit_step(2, 1024));
  for (int s = 0; s < 5; ++s) h.run_step(dit_step(2, 2048 + 64 * s));
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.branches, 1u);
  EXPECT_EQ(st.steps_dynamic, 5u);
  EXPECT_EQ(st.breaks, 5u);
  EXPECT_GT(st.recorded_allocations, 0u);
}

TEST(Misuse, BadOptionsAreRejected) {
  arena::HostBackend backend;
  CompilerOptions options = Harness::small_options();
  options.branch_cap = 0;
  EXPECT_THROW({ Compiler c(backend, options); }, InvalidArgument);
  options = Harness::small_options();
  options.default_alignment = 100;
  EXPECT_THROW({ Compiler c(backend, options); }, InvalidArgument);
}

}  // namespace
}  // namespace memplan::testing
