// Check mode on the host backend (CompilerOptions::check): poison on hand-out and free, fresh
// addresses that are never reused, pages that come back only after the streams passed the free,
// guard gaps that fault, and describe_address for every kind of address. The planted bug of the
// field report (a reader on a side stream with no event before the main stream's free) is run
// in normal and in check mode. The GPU version is gpu_check_test.cpp.
#include <fmt/format.h>
#include <gmock/gmock.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "memplan/arena/host_stream.hpp"
#include "memplan/arena/pointer_errors.hpp"
#include "step_program.hpp"
#include "support/host_gate.hpp"
#include "support/readable.hpp"
#include "workflows.hpp"

namespace memplan::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

CompilerOptions with_check(CheckOptions check) {
  CompilerOptions o = Harness::small_options();
  check.reserve_bytes = std::size_t{64} << 30;
  o.check = check;
  return o;
}
const CheckOptions kAll{.poison = true, .no_reuse = true, .guard_gaps = true};

std::uint32_t word_at(const void* p, std::size_t index = 0) {
  std::uint32_t w = 0;
  std::memcpy(&w, static_cast<const std::byte*>(p) + 4 * index, 4);
  return w;
}

TEST(CheckMode, OffByDefaultAndDescribeAddressStillNamesTheRange) {
  Harness h;
  EXPECT_FALSE(h.compiler().options().check.enabled());
  const Program program{alloc(1, 4096), alloc(2, 100), free_(1), free_(2)};
  h.run_step(program);
  const arena::CallCounts before = h.backend().calls();
  const std::vector<void*> p = h.run_step(program);
  EXPECT_EQ((h.backend().calls() - before).total(), 0u);  // no fill, no query: nothing at all
  const AddressReport r = h.compiler().describe_address(p[1]);
  EXPECT_EQ(r.kind, AddressKind::Unused);
  EXPECT_EQ(r.region, "planned arena");
  EXPECT_TRUE(r.mapped);
  EXPECT_THAT(r.text, HasSubstr("check mode is off"));
  int local = 0;
  const AddressReport foreign = h.compiler().describe_address(&local);
  EXPECT_EQ(foreign.kind, AddressKind::NotOwned);
  EXPECT_THAT(foreign.text, HasSubstr("not memplan's"));
  EXPECT_THAT(h.compiler().report(), ::testing::Not(HasSubstr("check mode")));
}

TEST(CheckMode, PoisonAloneKeepsThePlansAndPoisonsHandOutAndFree) {
  Harness h(with_check({.poison = true}));
  const std::size_t bytes = 1002;  // not whole words: the poison covers the last partial word
  const std::size_t words = (bytes + 3) / 4;
  std::vector<void*> first;
  arena::CallCounts before;
  for (int s = 0; s < 4; ++s) {
    if (s == 1) before = h.backend().calls();
    auto step = h.compiler().step("denoise");
    void* a = h.compiler().allocate(bytes, {}, "a");
    for (std::size_t i = 0; i < words; ++i) {
      ASSERT_EQ(word_at(a, i), kPoisonAllocated) << "step " << s << " word " << i;
    }
    std::memset(a, 0x11, bytes);
    void* b = h.compiler().allocate(4096);
    h.compiler().deallocate(a);
    for (std::size_t i = 0; i < words; ++i) {
      ASSERT_EQ(word_at(a, i), kPoisonFreed) << "step " << s << " word " << i;
    }
    h.compiler().deallocate(b);
    if (s == 1) first = {a, b};
    if (s > 1) {
      EXPECT_EQ((std::vector<void*>{a, b}), first) << "step " << s;
    }
  }
  const arena::CallCounts replayed = h.backend().calls() - before;
  EXPECT_EQ(replayed.memory_calls(), 0u);  // replay maps nothing; the poison is only fills
  EXPECT_EQ(replayed[arena::Call::Fill], 3u * 4u);
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.steps_replayed, 3u);
  EXPECT_EQ(st.breaks, 0u);
  EXPECT_THAT(h.compiler().report(),
              HasSubstr("check mode: poison on, no reuse off, guard gaps off"));
}

TEST(CheckMode, NoAddressIsEverHandedOutTwiceAcrossStepsPausesAndOutsideSteps) {
  Harness h(with_check({.no_reuse = true}));
  std::vector<std::pair<std::uintptr_t, std::size_t>> ranges;
  const auto keep = [&](const std::vector<void*>& pointers, const Program& program) {
    std::size_t i = 0;
    for (const Op& op : program) {
      if (op.kind == Op::Alloc)
        ranges.emplace_back(reinterpret_cast<std::uintptr_t>(pointers[i++]), op.size);
    }
  };
  const Program step = dit_step(2, 256);
  const Program paused{paused_alloc(100, 3000), free_(100)};
  for (int s = 0; s < 6; ++s) {
    keep(h.run_step(step), step);
    keep(h.run_step(paused, "paused"), paused);
    void* outside = h.compiler().allocate(512);
    ranges.emplace_back(reinterpret_cast<std::uintptr_t>(outside), 512);
    h.compiler().deallocate(outside);
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    ASSERT_GE(ranges[i].first, ranges[i - 1].first + ranges[i - 1].second) << "allocation " << i;
  }
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.breaks, 0u);  // the plans see no events in this mode
  EXPECT_EQ(st.steps_replayed + st.steps_recorded, 12u);
}

TEST(CheckMode, TheRogueWorkflowKeepsEveryByteUnderFullChecks) {
  Harness h(with_check(kAll));
  run_workflow(h, 7, /*paused=*/false, nullptr);  // the harness checks every buffer's bytes
  EXPECT_THAT(h.compiler().report(), HasSubstr("check heap:"));
}

struct Outcome {
  std::uint32_t seen = 0;  // what the late reader read
  bool reused = false;     // whether the next buffer got the freed one's address
  std::string report;      // describe_address of the address it read
};

// The planted bug: a reader on a side stream reads `a`, and the main (default) stream frees `a`
// with no event after that read, then writes the next buffer. The reader runs last.
Outcome planted_bug(CompilerOptions options) {
  arena::HostBackend backend;
  arena::HostStream side;  // outlives the compiler, which fences its streams until destruction
  Compiler compiler(backend, options);
  void* side_output = compiler.allocate(64, side.ref(), "side output");  // side becomes a user
  const std::size_t words = 1024;
  Outcome out;
  for (int s = 0; s < 2; ++s) {  // recorded, then replayed
    auto step = compiler.step("denoise");
    auto* a = static_cast<std::uint32_t*>(compiler.allocate(4 * words, {}, "activations"));
    std::fill_n(a, words, 0x11111111u);
    std::atomic<bool> go{false};
    std::uint32_t seen = 0;
    side.enqueue([&] {
      while (!go.load()) std::this_thread::yield();
      seen = a[words / 2];
    });
    compiler.deallocate(a);
    auto* b = static_cast<std::uint32_t*>(compiler.allocate(4 * words, {}, "next"));
    std::fill_n(b, words, 0x22222222u);
    go = true;
    side.synchronize();
    out = Outcome{seen, a == b, compiler.describe_address(a + words / 2).text};
    compiler.deallocate(b);
  }
  compiler.deallocate(side_output, side.ref());
  return out;
}

TEST(CheckMode, ALateReaderSeesPoisonWhereNormalModeSilentlyGivesItTheNextBuffer) {
  const Outcome normal = planted_bug(Harness::small_options());
  EXPECT_TRUE(normal.reused);
  EXPECT_EQ(normal.seen, 0x22222222u);  // silently wrong: the next buffer's data

  const Outcome poison_only = planted_bug(with_check({.poison = true}));
  EXPECT_TRUE(poison_only.reused);
  EXPECT_EQ(poison_only.seen, 0x22222222u);  // poison alone cannot show a reuse race

  const Outcome checked = planted_bug(with_check(kAll));
  EXPECT_FALSE(checked.reused);
  EXPECT_EQ(checked.seen, kPoisonFreed);
  EXPECT_THAT(checked.report, AllOf(HasSubstr("byte 2048 of buffer 'activations'"),
                                    HasSubstr("allocated in step 1 'denoise' at event 0"),
                                    HasSubstr("freed in step 1 'denoise' at event 1")));
}

TEST(CheckMode, GuardGapsFaultPastEitherEndAndTheReportNamesTheNeighbour) {
  arena::HostBackend backend;
  Compiler compiler(backend, with_check({.guard_gaps = true}));
  const std::size_t page = backend.granularity();
  auto step = compiler.step("denoise");
  auto* x = static_cast<std::byte*>(compiler.allocate(page, {}, "x"));
  auto* small = static_cast<std::byte*>(compiler.allocate(100, {}, "small"));
  EXPECT_TRUE(readable(x));
  EXPECT_TRUE(readable(x + page - 1));
  EXPECT_FALSE(readable(x - 1));
  EXPECT_FALSE(readable(x + page));
  EXPECT_FALSE(readable(small + 256));  // 100 B at 256-byte alignment: the page ends 156 B later

  const AddressReport past = compiler.describe_address(x + page + 10);
  EXPECT_EQ(past.kind, AddressKind::Gap);
  EXPECT_FALSE(past.mapped);
  ASSERT_TRUE(past.buffer.has_value());
  EXPECT_EQ(past.buffer->tag, "x");
  EXPECT_EQ(past.offset, static_cast<std::ptrdiff_t>(page + 10));
  EXPECT_THAT(past.text, HasSubstr("nearest: 10 B past the end of buffer 'x'"));
  const AddressReport before = compiler.describe_address(x - 16);
  EXPECT_THAT(before.text, HasSubstr("16 B before the start of buffer 'x'"));
  const AddressReport padding = compiler.describe_address(small + 120);
  EXPECT_EQ(padding.kind, AddressKind::Padding);
  EXPECT_TRUE(padding.mapped);
  EXPECT_THAT(padding.text, HasSubstr("padding, 20 B past the end of buffer 'small'"));
  const AddressReport unused = compiler.describe_address(small + 256);
  EXPECT_EQ(unused.kind, AddressKind::Unused);
  compiler.deallocate(x);
  compiler.deallocate(small);
}

TEST(CheckMode, DescribeAddressNamesTheBufferItsStepScopeEventAndFree) {
  arena::HostBackend backend;
  Compiler compiler(backend, with_check(kAll));
  void* weights = compiler.allocate(64, {}, "weights");
  auto* qkv = static_cast<std::byte*>([&] {
    auto step = compiler.step("denoise");
    auto scope = compiler.scope("block");
    void* buffer = compiler.allocate(128, {}, "qkv");
    void* cache = nullptr;
    {
      auto pause = compiler.pause();
      cache = compiler.allocate(64, {}, "cache");
    }
    EXPECT_THAT(
        compiler.describe_address(cache).text,
        HasSubstr("allocated inside a pause during step 0 'denoise', scope 'denoise/block'"));
    compiler.deallocate(buffer);
    compiler.deallocate(cache);
    return buffer;
  }());
  const AddressReport r = compiler.describe_address(qkv + 5);
  EXPECT_EQ(r.kind, AddressKind::Buffer);
  EXPECT_EQ(r.region, "check heap");
  EXPECT_EQ(r.offset, 5);
  ASSERT_TRUE(r.buffer.has_value());
  EXPECT_EQ(r.buffer->tag, "qkv");
  EXPECT_EQ(r.buffer->bytes, 128u);
  EXPECT_EQ(r.buffer->allocated.event, 0u);
  EXPECT_EQ(r.buffer->allocated.scope, "denoise/block");
  ASSERT_TRUE(r.buffer->freed.has_value());
  EXPECT_EQ(r.buffer->freed->event, 1u);
  EXPECT_THAT(r.text,
              AllOf(HasSubstr("byte 5 of buffer 'qkv' (128 B at"),
                    HasSubstr("allocated in step 0 'denoise' at event 0, scope 'denoise/block'"),
                    HasSubstr("freed in step 0 'denoise' at event 1"),
                    HasSubstr("in the check heap: the pages of a freed allocation, unmapped")));
  EXPECT_FALSE(r.mapped);
  const AddressReport w = compiler.describe_address(weights);
  EXPECT_THAT(w.text, AllOf(HasSubstr("buffer 'weights'"),
                            HasSubstr("allocated outside steps (before step 0), alive")));
  EXPECT_TRUE(w.mapped);
  int local = 0;
  EXPECT_EQ(compiler.describe_address(&local).kind, AddressKind::NotOwned);
  EXPECT_THAT(compiler.describe_address(&local).text, HasSubstr("and the check heap"));
  compiler.deallocate(weights);
}

TEST(CheckMode, FreedPagesComeBackOnlyAfterTheStreamsPassTheFree) {
  arena::HostBackend backend;
  arena::HostStream side;  // outlives the compiler
  Compiler compiler(backend, with_check(kAll));
  const std::size_t page = backend.granularity();
  void* side_output = compiler.allocate(64, side.ref());
  auto step = compiler.step("denoise");
  arena::CallCounts before;
  {
    Gate gate(side);  // the side stream's kernel is still running
    void* a = compiler.allocate(page);
    before = backend.calls();
    compiler.deallocate(a);
    EXPECT_EQ(word_at(a), kPoisonFreed);
    void* b = compiler.allocate(page);  // polls: the side stream has not passed the free
    EXPECT_EQ((backend.calls() - before)[arena::Call::ReleaseChunk], 0u);
    EXPECT_TRUE(compiler.describe_address(a).mapped);
    gate.open();
    side.synchronize();
    compiler.deallocate(b);  // polls again: both frees have passed every stream
  }
  const arena::CallCounts d = backend.calls() - before;
  EXPECT_EQ(d[arena::Call::ReleaseChunk], 2u);
  EXPECT_EQ(d[arena::Call::Unmap], 2u);
  EXPECT_EQ(d[arena::Call::WaitFence], 0u);  // the compiler never blocked on the stream

  // trim() waits for what is still pending.
  void* c = compiler.allocate(page);
  side.enqueue([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  compiler.deallocate(c);
  step.end();
  const arena::CallCounts at_trim = backend.calls();
  compiler.trim();
  EXPECT_EQ((backend.calls() - at_trim)[arena::Call::ReleaseChunk], 1u);
  EXPECT_GE((backend.calls() - at_trim)[arena::Call::WaitFence], 1u);
  EXPECT_FALSE(compiler.describe_address(c).mapped);
  compiler.deallocate(side_output, side.ref());
}

TEST(CheckMode, DoubleAndInteriorFreesSayWhatTheBufferWas) {
  for (const CheckOptions& check : {kAll, CheckOptions{.poison = true}}) {
    Harness h(with_check(check));
    for (int s = 0; s < 2; ++s) {
      auto step = h.compiler().step("denoise");
      void* qkv = h.compiler().allocate(4096, {}, "qkv");
      void* kv = h.compiler().allocate(4096, {}, "kv");
      h.compiler().deallocate(qkv);
      try {
        h.compiler().deallocate(qkv);
        ADD_FAILURE() << "double free accepted";
      } catch (const arena::DoubleFree& e) {
        EXPECT_THAT(e.what(),
                    AllOf(HasSubstr("check mode: buffer 'qkv' (4096 B"),
                          HasSubstr(fmt::format("freed in step {} 'denoise' at event 2", s))))
            << "fresh addresses: " << check.fresh_addresses();
      }
      try {
        h.compiler().deallocate(static_cast<std::byte*>(kv) + 8);
        ADD_FAILURE() << "interior free accepted";
      } catch (const InvalidPointer& e) {
        EXPECT_THAT(e.what(), HasSubstr("check mode: 8 B into buffer 'kv'"))
            << "fresh addresses: " << check.fresh_addresses();
      }
      h.compiler().deallocate(kv);
    }
  }
}

TEST(CheckMode, AnExhaustedCheckHeapIsAClearErrorAndTheCompilerStaysUsable) {
  arena::HostBackend backend;
  const std::size_t page = backend.granularity();
  CompilerOptions options = Harness::small_options();
  options.check = {.no_reuse = true, .guard_gaps = true, .reserve_bytes = 16 * page};
  Compiler compiler(backend, options);
  auto step = compiler.step("denoise");
  std::vector<void*> live;
  try {
    for (int i = 0; i < 100; ++i) live.push_back(compiler.allocate(page));
    FAIL() << "100 pages with guards fitted in 16";
  } catch (const OutOfMemory& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("address space exhausted"),
                                HasSubstr("CompilerOptions::check.reserve_bytes")));
  }
  EXPECT_EQ(live.size(), 8u);
  for (void* p : live) compiler.deallocate(p);
  step.end();
  EXPECT_THAT(compiler.describe_address(live[0]).text, HasSubstr("freed in step 0"));

  options.check.reserve_bytes = 0;
  EXPECT_THROW(Compiler(backend, options), InvalidArgument);
}

}  // namespace
}  // namespace memplan::testing
