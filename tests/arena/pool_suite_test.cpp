// Persistent-pool behaviour on every backend: placement, growth at a fixed base with data kept,
// coalescing, trim, errors, and a randomized run against a shadow model.
#include "arena_suite.hpp"
#include "memplan/arena/limiting_backend.hpp"
#include "memplan/arena/persistent_pool.hpp"
#include "memplan/arena/pointer_errors.hpp"
#include "memplan/error.hpp"

#include <gmock/gmock.h>

#include <map>
#include <random>

namespace memplan::arena::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

TEST_P(PoolSuite, SmallAllocationsCostTheirOwnSize) {
  PersistentPool pool(backend(), PoolOptions{64 * chunk_, 16 * chunk_, "p"});
  EXPECT_EQ(pool.arena().mapped_bytes(), 0u);  // nothing until the first allocation
  std::vector<void*> ptrs;
  for (int i = 0; i < 100; ++i) ptrs.push_back(pool.allocate(200));
  const PoolStats s = pool.stats();
  EXPECT_EQ(s.live_allocations, 100u);
  EXPECT_EQ(s.allocated_bytes, 100u * 256u);
  EXPECT_EQ(s.mapped_bytes, 16 * chunk_);  // one chunk for all of them
  for (std::size_t i = 1; i < ptrs.size(); ++i) EXPECT_EQ(addr(ptrs[i]) - addr(ptrs[i - 1]), 256u);
  for (void* p : ptrs) EXPECT_EQ(addr(p) % PersistentPool::kAlignment, 0u);
  for (void* p : ptrs) pool.deallocate(p);
  EXPECT_EQ(pool.stats().blocks, 1u);  // all coalesced back into one free block
  EXPECT_EQ(pool.stats().largest_free_block, 16 * chunk_);
}

TEST_P(PoolSuite, BestFitPicksTheSmallestHoleThatFits) {
  PersistentPool pool(backend(), PoolOptions{64 * chunk_, 16 * chunk_, "p"});
  void* a = pool.allocate(4096);
  void* guard1 = pool.allocate(256);
  void* b = pool.allocate(1024);
  void* guard2 = pool.allocate(256);
  void* c = pool.allocate(2048);
  void* guard3 = pool.allocate(256);
  pool.deallocate(a);
  pool.deallocate(b);
  pool.deallocate(c);
  EXPECT_EQ(pool.allocate(1024), b);
  EXPECT_EQ(pool.allocate(2000), c);
  EXPECT_EQ(pool.allocate(3000), a);
  for (void* g : {guard1, guard2, guard3}) pool.deallocate(g);
}

TEST_P(PoolSuite, GrowthKeepsOldAllocationsAndTheirData) {
  PersistentPool pool(backend(), PoolOptions{64 * chunk_, chunk_, "p"});
  void* first = pool.allocate(chunk_ / 2);
  const auto a = pattern(chunk_ / 2, 11);
  env().write(first, a);
  void* const base = pool.arena().base();
  void* big = pool.allocate(5 * chunk_);  // needs growth: the top free block extends
  EXPECT_EQ(pool.arena().base(), base);
  EXPECT_EQ(addr(big), addr(first) + chunk_ / 2);  // continues the top free block
  EXPECT_EQ(pool.arena().mapped_bytes(), 6 * chunk_);
  EXPECT_EQ(env().read(first, a.size()), a);
  const auto b = pattern(5 * chunk_, 12);
  env().write(big, b);
  EXPECT_EQ(env().read(big, b.size()), b);
  pool.deallocate(first);
  pool.deallocate(big);
}

TEST_P(PoolSuite, TrimReturnsFreeChunksAtTheTop) {
  PersistentPool pool(backend(), PoolOptions{64 * chunk_, chunk_, "p"});
  void* keep = pool.allocate(256);
  void* big = pool.allocate(6 * chunk_);
  EXPECT_EQ(pool.arena().mapped_chunks(), 7u);
  EXPECT_EQ(pool.trim(), 0u);  // top block is live
  pool.deallocate(big);
  const CallCounts before = pool.arena().calls();
  EXPECT_EQ(pool.trim(), 6 * chunk_);
  EXPECT_EQ(pool.arena().mapped_chunks(), 1u);
  EXPECT_EQ((pool.arena().calls() - before)[Call::release_chunk], 6u);
  EXPECT_EQ(pool.trim(), 0u);
  // The pool still works, and grows again where it shrank.
  void* again = pool.allocate(2 * chunk_);
  EXPECT_EQ(addr(again), addr(keep) + 256);
  pool.deallocate(again);
  pool.deallocate(keep);
  EXPECT_EQ(pool.trim(), 3 * chunk_);
  EXPECT_EQ(pool.arena().mapped_bytes(), 0u);
  EXPECT_NE(pool.allocate(256), nullptr);
}

TEST_P(PoolSuite, BadSizesAreNamedErrors) {
  PersistentPool pool(backend(), PoolOptions{64 * chunk_, chunk_, "p"});
  try {
    (void)pool.allocate(0);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("zero"));
  }
  try {
    (void)pool.allocate(static_cast<std::size_t>(-4096));
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("absurd"));
  }
  EXPECT_EQ(pool.stats().live_allocations, 0u);
  EXPECT_NE(pool.allocate(1), nullptr);
}

TEST_P(PoolSuite, BadPointersAreNamedErrors) {
  PersistentPool pool(backend(), PoolOptions{64 * chunk_, chunk_, "p"});
  void* p = pool.allocate(1000);
  void* q = pool.allocate(1000);
  int local = 0;
  EXPECT_THROW(pool.deallocate(&local), ForeignPointer);
  EXPECT_THROW(pool.deallocate(static_cast<std::byte*>(p) + 256), ForeignPointer);  // interior
  EXPECT_THROW(pool.deallocate(static_cast<std::byte*>(pool.arena().base()) + 40 * chunk_), ForeignPointer);
  pool.deallocate(p);
  try {
    pool.deallocate(p);
    FAIL() << "double free accepted";
  } catch (const DoubleFree& e) {
    EXPECT_THAT(e.what(), HasSubstr("freed twice"));
  }
  EXPECT_THROW((void)pool.size_of(p), DoubleFree);
  pool.deallocate(nullptr);  // like free(nullptr)
  EXPECT_EQ(pool.size_of(q), 1024u);
  EXPECT_EQ(pool.stats().live_allocations, 1u);
  pool.deallocate(q);
  EXPECT_EQ(pool.stats().live_allocations, 0u);
}

TEST_P(PoolSuite, OutOfMemoryNamesTheNumbersAndLeavesThePoolUsable) {
  LimitingBackend limited(backend(), 4 * chunk_);
  PersistentPool pool(limited, PoolOptions{64 * chunk_, chunk_, "p"});
  void* a = pool.allocate(2 * chunk_);
  try {
    (void)pool.allocate(3 * chunk_);
    FAIL() << "limit not enforced";
  } catch (const OutOfMemory& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("requested"), HasSubstr("mapped"), HasSubstr("reserved"),
                                HasSubstr("free"), HasSubstr(std::to_string(3 * chunk_))));
  }
  try {
    (void)pool.allocate(65 * chunk_);  // past the reservation
    FAIL() << "reservation not enforced";
  } catch (const OutOfMemory& e) {
    EXPECT_THAT(e.what(), HasSubstr("reserved"));
  }
  EXPECT_EQ(pool.arena().mapped_bytes(), 2 * chunk_);
  void* b = pool.allocate(2 * chunk_);  // exactly what is left
  pool.deallocate(a);
  pool.deallocate(b);
  EXPECT_EQ(pool.stats().blocks, 1u);
}

// Random sizes, random frees, growth and trims, against a shadow map of live ranges: no two live
// allocations overlap, every one is 256-aligned inside the mapped range, and its bytes survive.
TEST_P(PoolSuite, RandomizedAgainstShadowModel) {
  PersistentPool pool(backend(), PoolOptions{16384 * chunk_, 4 * chunk_, "p"});
  std::mt19937_64 rng(42);
  struct Live {
    std::size_t size;
    std::uint32_t seed;
  };
  std::map<std::uintptr_t, Live> shadow;
  const std::size_t probe = 64;  // bytes checked at each end of an allocation
  auto check_and_free = [&](std::map<std::uintptr_t, Live>::iterator it) {
    void* p = reinterpret_cast<void*>(it->first);
    const Live l = it->second;
    const auto expect = pattern(2 * probe, l.seed);
    const std::size_t head = std::min(probe, l.size);
    const std::size_t tail = std::min(probe, l.size - head);
    ASSERT_EQ(env().read(p, head), std::vector<std::uint8_t>(expect.begin(), expect.begin() + static_cast<long>(head)));
    ASSERT_EQ(env().read(static_cast<std::byte*>(p) + l.size - tail, tail),
              std::vector<std::uint8_t>(expect.begin() + static_cast<long>(probe),
                                        expect.begin() + static_cast<long>(probe + tail)));
    pool.deallocate(p);
    shadow.erase(it);
  };
  std::size_t live_bytes = 0;
  for (int op = 0; op < env().random_ops(); ++op) {
    const auto roll = rng() % 100;
    if (roll < 52 || shadow.empty()) {
      const std::size_t size = (rng() % 4 == 0) ? 1 + rng() % (3 * chunk_) : 1 + rng() % 5000;
      void* p = pool.allocate(size);
      const auto a = addr(p);
      ASSERT_EQ(a % 256, 0u);
      ASSERT_GE(pool.size_of(p), size);
      ASSERT_LE(a + size, addr(pool.arena().base()) + pool.arena().mapped_bytes());
      const auto next = shadow.lower_bound(a);
      if (next != shadow.end()) {
        ASSERT_LE(a + size, next->first) << "overlaps the next live allocation";
      }
      if (next != shadow.begin()) {
        const auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second.size, a) << "overlaps the previous live allocation";
      }
      const auto seed = static_cast<std::uint32_t>(op);
      const auto bytes = pattern(2 * probe, seed);
      const std::size_t head = std::min(probe, size);
      const std::size_t tail = std::min(probe, size - head);  // never over the head
      env().write(p, std::span(bytes).first(head));
      env().write(static_cast<std::byte*>(p) + size - tail, std::span(bytes).subspan(probe, tail));
      shadow.emplace(a, Live{size, seed});
      live_bytes += pool.size_of(p);
    } else {
      auto it = shadow.begin();
      std::advance(it, static_cast<long>(rng() % shadow.size()));
      live_bytes -= pool.size_of(reinterpret_cast<void*>(it->first));
      check_and_free(it);
      if (HasFatalFailure()) return;
    }
    if (op % 1000 == 999) (void)pool.trim();
    ASSERT_EQ(pool.stats().live_allocations, shadow.size());
    ASSERT_EQ(pool.stats().allocated_bytes, live_bytes);
  }
  while (!shadow.empty()) {
    check_and_free(shadow.begin());
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(pool.stats().blocks, 1u);
  EXPECT_EQ(pool.stats().free_bytes, pool.arena().mapped_bytes());
}

}  // namespace
}  // namespace memplan::arena::test
