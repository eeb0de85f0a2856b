// Counting is the contract; logging and limits are adaptors that stack on any backend.
#include "memplan/arena/arena.hpp"
#include "memplan/arena/forwarding_backend.hpp"
#include "memplan/arena/host_backend.hpp"
#include "memplan/arena/limiting_backend.hpp"
#include "memplan/arena/logging_backend.hpp"
#include "memplan/error.hpp"
#include "memplan/log.hpp"

#include <gmock/gmock.h>

#include <array>
#include <atomic>
#include <functional>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

namespace memplan::arena {
namespace {

TEST(CallCounts, MemoryCallsExcludeFencesAndQueries) {
  CallCounts c;
  c[Call::Map] = 2;
  c[Call::Unmap] = 1;
  c[Call::WaitFence] = 5;
  c[Call::QueryFree] = 1;
  EXPECT_EQ(c.memory_calls(), 3u);
  EXPECT_EQ(c.total(), 9u);
  CallCounts d = c;
  d[Call::Map] = 3;
  EXPECT_EQ((d - c)[Call::Map], 1u);
  EXPECT_EQ((d - c).total(), 1u);
  EXPECT_EQ(to_string(Call::SetAccess), "set_access");
  EXPECT_EQ(to_string(Call::Fill), "fill");
  EXPECT_EQ(to_string(Call::QueryFence), "query_fence");
  c[Call::Fill] = 4;  // a fill writes bytes, not mappings
  EXPECT_EQ(c.memory_calls(), 3u);
}

TEST(Adaptors, ForwardFillsAndFenceQueriesAndEveryLayerCounts) {
  HostBackend host;
  LoggingBackend logging(host);
  LimitingBackend limited(logging, 4 * host.granularity());
  Arena arena(limited, 2 * host.granularity(), ArenaOptions{host.granularity(), "t"});
  arena.ensure_mapped(1);
  auto* words = static_cast<std::uint32_t*>(arena.base());
  limited.fill(words, 16, 0x7FFD7FFDu, StreamRef{});  // the host's default stream: at once
  EXPECT_EQ(words[0], 0x7FFD7FFDu);
  EXPECT_EQ(words[3], 0x7FFD7FFDu);
  EXPECT_EQ(words[4], 0u);
  EXPECT_THROW(limited.fill(words, 6, 0u, StreamRef{}), InvalidArgument);  // not whole words
  const FenceHandle fence = limited.create_fence(StreamRef{});
  limited.record_fence(fence, StreamRef{});
  EXPECT_TRUE(limited.fence_passed(fence));
  limited.destroy_fence(fence);
  for (const PhysicalBackend* b :
       {static_cast<PhysicalBackend*>(&host), static_cast<PhysicalBackend*>(&logging),
        static_cast<PhysicalBackend*>(&limited)}) {
    EXPECT_EQ(b->calls()[Call::Fill], b == &limited ? 2u : 1u)
        << b->name();  // the bad one stops at the top
    EXPECT_EQ(b->calls()[Call::QueryFence], 1u);
  }
}

// The adaptors' base forwards every call unchanged: an adaptor that overrides nothing is the
// upstream, call for call, through a whole arena's life.
TEST(ForwardingBackend, AnAdaptorThatOverridesNothingForwardsEveryCall) {
  class Plain final : public ForwardingBackend {
   public:
    using ForwardingBackend::ForwardingBackend;
  };
  HostBackend host;
  Plain plain(host);
  EXPECT_EQ(plain.granularity(), host.granularity());
  EXPECT_EQ(plain.name(), host.name());
  {
    Arena arena(plain, 8 * host.granularity(), ArenaOptions{host.granularity(), "t"});
    arena.add_user(StreamRef{});
    arena.ensure_mapped(3 * host.granularity());
    const std::array<ByteRange, 1> keep{{{4 * host.granularity(), host.granularity()}}};
    arena.remap(keep);
    (void)plain.free_bytes();
    plain.fill(arena.address(4 * host.granularity()), 16, 1u, StreamRef{});
  }
  const CallCounts mine = plain.calls();
  const CallCounts theirs = host.calls();
  for (std::size_t i = 0; i < kCallKinds; ++i) {
    EXPECT_EQ(mine.n[i], theirs.n[i]) << "call kind " << i;
  }
  EXPECT_GT(mine.total(), 10u);
}

TEST(LoggingBackend, ForwardsLogsAndBothLayersCount) {
  std::ostringstream out;
  set_log_sink([&out](LogLevel level, std::string_view message) {
    if (level == LogLevel::Debug) out << message << '\n';
  });
  const LogLevel level = log_level();
  set_log_level(LogLevel::Debug);
  HostBackend host;
  LoggingBackend logging(host);
  {
    Arena arena(logging, 2 * host.granularity(), ArenaOptions{host.granularity(), "t"});
    arena.ensure_mapped(1);
  }
  set_log_level(level);
  set_log_sink({});
  EXPECT_EQ(logging.calls(), host.calls());
  EXPECT_EQ(host.calls()[Call::Map], 1u);
  EXPECT_THAT(out.str(), ::testing::HasSubstr("create_chunk("));
  EXPECT_THAT(out.str(), ::testing::HasSubstr("free_va("));
}

TEST(LimitingBackend, RefusesPastTheLimitAndCreditsReleases) {
  HostBackend host;
  const std::size_t g = host.granularity();
  LimitingBackend limited(host, 2 * g);
  const ChunkHandle a = limited.create_chunk(g);
  const ChunkHandle b = limited.create_chunk(g);
  EXPECT_EQ(limited.used_bytes(), 2 * g);
  EXPECT_THROW((void)limited.create_chunk(g), OutOfMemory);
  limited.release_chunk(a);
  EXPECT_EQ(limited.used_bytes(), g);
  EXPECT_LE(limited.free_bytes(), g);
  const ChunkHandle c = limited.create_chunk(g);
  limited.release_chunk(b);
  limited.release_chunk(c);
  EXPECT_EQ(limited.used_bytes(), 0u);
  EXPECT_EQ(host.calls()[Call::CreateChunk], 3u);  // the refused one never reached the host
}

// An upstream that hands out the lowest free handle number, as memfds (file descriptors) do, and
// runs `after_release` once the number is free again but before release_chunk returns: the window
// in which another thread's create_chunk can be given the same number. Only chunks exist here.
class RecyclingBackend final : public PhysicalBackend {
 public:
  std::function<void()> after_release;

 private:
  std::size_t do_granularity() const noexcept override { return 4096; }
  std::string_view do_name() const noexcept override { return "recycling"; }
  ChunkHandle do_create_chunk(std::size_t) override {
    std::size_t h = 0;
    while (h < in_use_.size() && in_use_[h]) ++h;
    if (h == in_use_.size()) in_use_.push_back(false);
    in_use_[h] = true;
    return h;
  }
  void do_release_chunk(ChunkHandle chunk) override {
    in_use_.at(chunk) = false;
    if (after_release) std::exchange(after_release, nullptr)();
  }
  [[noreturn]] static void only_chunks() {
    throw Error("recycling backend: only chunks exist here");
  }
  void* do_reserve_va(std::size_t) override { only_chunks(); }
  void do_free_va(void*, std::size_t) override { only_chunks(); }
  void do_map(void*, std::size_t, ChunkHandle) override { only_chunks(); }
  void do_set_access(void*, std::size_t) override { only_chunks(); }
  void do_unmap(void*, std::size_t) override { only_chunks(); }
  FenceHandle do_create_fence(StreamRef) override { only_chunks(); }
  void do_record_fence(FenceHandle, StreamRef) override { only_chunks(); }
  void do_wait_fence(FenceHandle) override { only_chunks(); }
  void do_destroy_fence(FenceHandle) override { only_chunks(); }
  bool do_fence_passed(FenceHandle) override { only_chunks(); }
  void do_fill(void*, std::size_t, std::uint32_t, StreamRef) override { only_chunks(); }
  std::size_t do_free_bytes() override { return 0; }

  std::vector<bool> in_use_;
};

TEST(LimitingBackend, AHandleReusedWhileItsReleaseReturnsIsCountedOnce) {
  RecyclingBackend upstream;
  const std::size_t g = upstream.granularity();
  LimitingBackend limited(upstream, 2 * g);
  const ChunkHandle a = limited.create_chunk(g);
  ChunkHandle b = a + 1;
  // What another thread may do between the upstream's release and the adaptor's bookkeeping.
  upstream.after_release = [&] { b = limited.create_chunk(g); };
  limited.release_chunk(a);
  ASSERT_EQ(b, a) << "the upstream was to hand the freed number out again";
  EXPECT_EQ(limited.used_bytes(), g);
  limited.release_chunk(b);
  EXPECT_EQ(limited.used_bytes(), 0u);
  EXPECT_EQ(limited.create_chunk(2 * g), a);  // the whole limit is free again
}

// Two threads churn chunks through one limiting adaptor on real memfds, whose numbers the kernel
// recycles at once. Each thread holds at most one chunk, so the limit of two is never reached.
TEST(LimitingBackend, TwoThreadsKeepExactAccounts) {
  HostBackend host(HostBackendOptions{.commit = false});
  const std::size_t g = host.granularity();
  LimitingBackend limited(host, 2 * g);
  constexpr int kIterations = 20000;
  std::atomic<int> refused{0};
  auto churn = [&] {
    for (int i = 0; i < kIterations; ++i) {
      try {
        limited.release_chunk(limited.create_chunk(g));
      } catch (const OutOfMemory&) {
        ++refused;
      }
    }
  };
  std::thread other(churn);
  churn();
  other.join();
  EXPECT_EQ(refused.load(), 0);
  EXPECT_EQ(limited.used_bytes(), 0u);
  EXPECT_EQ(host.calls()[Call::CreateChunk], 2u * kIterations);
  EXPECT_EQ(host.calls()[Call::ReleaseChunk], 2u * kIterations);
}

TEST(HostBackend, ReservingMoreAddressSpaceThanExistsIsOutOfMemory) {
  HostBackend host;
  const std::size_t too_much = std::size_t{200} << 40;  // 200 TiB: past a 47-bit user address space
  try {
    Arena arena(host, too_much, ArenaOptions{host.granularity(), "t"});
    GTEST_SKIP() << "this machine reserved 200 TiB of address space";
  } catch (const OutOfMemory& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("cannot reserve"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("mmap"));
  }
}

TEST(HostBackend, SystemErrorsNameTheCall) {
  HostBackend host;
  try {
    host.map(reinterpret_cast<void*>(std::uintptr_t{1}), host.granularity(),
             123456);  // bad fd, bad address
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("mmap"));
  }
  EXPECT_EQ(host.calls()[Call::Map], 1u);  // failed calls count too
}

}  // namespace
}  // namespace memplan::arena
