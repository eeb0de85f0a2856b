// Persistent-pool behaviour on every backend: placement, growth at a fixed base with data kept,
// coalescing, trim, errors, and a randomized run against a shadow model.
#include "arena_suite.hpp"
#include "memplan/arena/limiting_backend.hpp"
#include "memplan/arena/persistent_pool.hpp"
#include "memplan/arena/pointer_errors.hpp"
#include "memplan/error.hpp"

#include <gmock/gmock.h>

#include <algorithm>
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

TEST_P(PoolSuite, WithinASizeClassTheLowestBlockThatFitsIsTaken) {
  // Two free blocks of one class (64 KiB and 65 KiB: a class is 4 KiB wide there): the lower one
  // a little larger than the request, the higher one its exact size, freed last (first in its
  // list). The lower is taken, so the pool fills from its bottom and its top stays free (as an
  // output dropped low is reused before room reserved at the top; docs/pytorch.md).
  PersistentPool pool(backend(), PoolOptions{64 * chunk_, 16 * chunk_, "p"});
  constexpr std::size_t kSize = 64 * 1024;
  void* low = pool.allocate(kSize + 1024);
  void* guard1 = pool.allocate(256);
  void* high = pool.allocate(kSize);
  void* guard2 = pool.allocate(256);
  pool.deallocate(low);
  pool.deallocate(high);
  EXPECT_EQ(pool.allocate(kSize), low);
  EXPECT_EQ(pool.allocate(kSize), high);  // the only block of the class left
  for (void* g : {guard1, guard2}) pool.deallocate(g);
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
  EXPECT_EQ((pool.arena().calls() - before)[Call::ReleaseChunk], 6u);
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

// A free block between live ones gives its whole chunks back (a hole); its edge chunks, shared
// with live neighbours, stay. An allocation there maps the hole again first, data around intact.
TEST_P(PoolSuite, TrimUnmapsWholeFreeChunksBetweenLiveBlocksAndAnAllocationMapsThemAgain) {
  PersistentPool pool(backend(), PoolOptions{64 * chunk_, chunk_, "p"});
  void* low = pool.allocate(chunk_ / 2);
  void* middle = pool.allocate(5 * chunk_);  // from chunk_ / 2: chunks 1-4 wholly inside
  void* high = pool.allocate(chunk_ / 2);
  const auto a = pattern(chunk_ / 2, 3);
  const auto c = pattern(chunk_ / 2, 4);
  env().write(low, a);
  env().write(high, c);
  EXPECT_EQ(pool.arena().mapped_chunks(), 6u);
  pool.deallocate(middle);
  EXPECT_EQ(pool.trim(), 4 * chunk_);
  EXPECT_EQ(pool.arena().mapped_chunks(), 2u);
  EXPECT_EQ(pool.stats().extent_bytes, 6 * chunk_);         // the pool did not shrink: high is live
  EXPECT_EQ(pool.stats().free_bytes, 2 * chunk_ - chunk_);  // mapped, not allocated
  EXPECT_EQ(pool.trim(), 0u);
  // The hole is the only free block: the allocation takes its start and maps chunks 1-3.
  void* again = pool.allocate(3 * chunk_);
  EXPECT_EQ(addr(again), addr(middle));
  EXPECT_EQ(pool.arena().mapped_chunks(), 5u);
  const auto b = pattern(3 * chunk_, 5);
  env().write(again, b);
  EXPECT_EQ(env().read(again, b.size()), b);
  EXPECT_EQ(env().read(low, a.size()), a);
  EXPECT_EQ(env().read(high, c.size()), c);
  pool.deallocate(again);
  pool.deallocate(high);
  pool.deallocate(low);
  EXPECT_EQ(pool.stats().blocks, 1u);
  EXPECT_EQ(pool.trim(), 5 * chunk_);  // chunks 0-3 and 5: one free block from the base
  EXPECT_EQ(pool.arena().mapped_bytes(), 0u);
  EXPECT_EQ(pool.stats().extent_bytes, 0u);
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
  EXPECT_THROW(pool.deallocate(static_cast<std::byte*>(pool.arena().base()) + 40 * chunk_),
               ForeignPointer);
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

// The free tail of the pool's partly used top chunk can be lent: the pool allocates around it
// (never into it), counts it apart, keeps its chunk through trims, names it in pointer errors, and
// takes it back as free memory.
TEST_P(PoolSuite, ALoanIsTheTailOfThePartlyUsedTopChunkAndThePoolNeverAllocatesIntoIt) {
  PersistentPool pool(backend(), PoolOptions{64 * chunk_, chunk_, "p"});
  EXPECT_EQ(pool.lendable_from(), std::nullopt);         // nothing mapped
  void* weights = pool.allocate(3 * chunk_ / 2 + 1000);  // ends inside the second chunk
  const std::size_t used = chunk_ / 2 + 1024;            // of the top chunk, rounded to 256
  ASSERT_EQ(pool.lendable_from(), used);
  EXPECT_THROW((void)pool.lend(used - 256), InvalidArgument);  // below the pool's bytes
  EXPECT_THROW((void)pool.lend(used + 1), InvalidArgument);    // not a multiple of 256
  EXPECT_THROW((void)pool.lend(chunk_), InvalidArgument);      // nothing left to lend

  const std::size_t from = used + 512;
  const PersistentPool::Loan loan = pool.lend(from);
  EXPECT_EQ(loan.chunk_offset, chunk_);
  EXPECT_EQ(loan.from, from);
  EXPECT_EQ(loan.chunk, pool.arena().chunk_at(chunk_));
  ASSERT_TRUE(pool.loan().has_value());
  PoolStats st = pool.stats();
  EXPECT_EQ(st.lent_bytes, chunk_ - from);
  EXPECT_EQ(st.free_bytes, 512u);
  EXPECT_EQ(st.allocated_bytes, 3 * chunk_ / 2 + 1024);

  // Allocations take the 512 bytes before the loan, then grow past it: none touches lent bytes.
  const std::uintptr_t lent_start = addr(pool.arena().base()) + chunk_ + from;
  const std::uintptr_t lent_end = addr(pool.arena().base()) + 2 * chunk_;
  std::vector<void*> more;
  for (int i = 0; i < 40; ++i) {
    void* p = pool.allocate(i % 3 == 0 ? 256 : chunk_ / 4);
    const std::uintptr_t a = addr(p);
    EXPECT_TRUE(a + pool.size_of(p) <= lent_start || a >= lent_end) << "allocation " << i;
    more.push_back(p);
  }
  EXPECT_EQ(pool.lendable_from(), from);  // the loan's chunk: the pool's bytes end at the loan
  try {
    pool.deallocate(reinterpret_cast<void*>(lent_start));
    ADD_FAILURE() << "a lent address was freed";
  } catch (const ForeignPointer& e) {
    EXPECT_THAT(e.what(), HasSubstr("lent"));
  }
  for (void* p : more) pool.deallocate(p);
  (void)pool.trim();  // the loan's chunk stays: the lent bytes are not free
  EXPECT_TRUE(pool.arena().is_mapped(chunk_));
  EXPECT_EQ(pool.stats().lent_bytes, chunk_ - from);

  // Moved to start lower (the pool's bytes allow it): the same chunk.
  const PersistentPool::Loan moved = pool.lend(used);
  EXPECT_EQ(moved.chunk, loan.chunk);
  EXPECT_EQ(pool.stats().lent_bytes, chunk_ - used);
  pool.end_loan();
  EXPECT_FALSE(pool.loan().has_value());
  st = pool.stats();
  EXPECT_EQ(st.lent_bytes, 0u);
  EXPECT_EQ(st.free_bytes, st.mapped_bytes - st.allocated_bytes);
  pool.deallocate(weights);
  EXPECT_EQ(pool.stats().blocks, 1u);  // the lent bytes coalesced back with the rest
  (void)pool.trim();
  EXPECT_EQ(pool.arena().mapped_bytes(), 0u);
}

// Bytes the pool used since its last trim() are never lent, even once freed: a buffer made and
// freed in every step keeps its room.
TEST_P(PoolSuite, ALoanStartsAboveWhatThePoolUsedSinceItsLastTrim) {
  PersistentPool pool(backend(), PoolOptions{64 * chunk_, chunk_, "p"});
  void* weights = pool.allocate(chunk_ / 4);
  void* scratch = pool.allocate(chunk_ / 4);
  pool.deallocate(scratch);
  EXPECT_EQ(pool.lendable_from(), chunk_ / 2);
  (void)pool.trim();
  EXPECT_EQ(pool.lendable_from(), chunk_ / 4);
  const PersistentPool::Loan loan = pool.lend(chunk_ / 2);
  void* again = pool.allocate(chunk_ / 8);  // below the loan
  EXPECT_LT(addr(again) + chunk_ / 8, addr(pool.arena().base()) + loan.from + 1);
  pool.deallocate(again);
  pool.end_loan();
  pool.deallocate(weights);
}

TEST_P(PoolSuite, NothingIsLendableFromAWholeChunkOrAFullOne) {
  PersistentPool pool(backend(), PoolOptions{64 * chunk_, chunk_, "p"});
  void* full = pool.allocate(chunk_);  // the top chunk is all the pool's
  EXPECT_EQ(pool.lendable_from(), std::nullopt);
  void* more = pool.allocate(256);
  EXPECT_EQ(pool.lendable_from(), 256u);
  const PersistentPool::Loan loan = pool.lend(chunk_ / 2);
  pool.deallocate(more);                  // the loan's chunk now holds no byte of the pool...
  EXPECT_EQ(pool.lendable_from(), 256u);  // ...but the pool used 256 there since its last trim
  (void)pool.trim();
  EXPECT_EQ(pool.lendable_from(), std::nullopt);
  EXPECT_EQ(loan.chunk_offset, chunk_);
  pool.end_loan();
  pool.deallocate(full);
  EXPECT_EQ(pool.stats().blocks, 1u);
}

// Random sizes and alignments, random frees, growth and trims, against a shadow map of live
// ranges (each as large as size_of): no two live allocations overlap, each is aligned as asked
// (alignment 0: plain allocate(bytes), 256) inside the mapped range, its bytes survive, and the
// statistics are exact; at the end the pool is one free block again.
void churn_against_shadow(PersistentPool& pool, const BackendEnv& env, std::size_t chunk,
                          std::uint64_t seed, std::span<const std::size_t> alignments) {
  std::mt19937_64 rng(seed);
  struct Live {
    std::size_t size;  // requested
    std::uint32_t seed;
  };
  std::map<std::uintptr_t, Live> shadow;
  const std::size_t probe = 64;  // bytes checked at each end of an allocation
  std::size_t live_bytes = 0;
  auto check_and_free = [&](std::map<std::uintptr_t, Live>::iterator it) {
    void* p = reinterpret_cast<void*>(it->first);
    const Live l = it->second;
    const auto expect = pattern(2 * probe, l.seed);
    const std::size_t head = std::min(probe, l.size);
    const std::size_t tail = std::min(probe, l.size - head);
    ASSERT_EQ(env.read(p, head),
              std::vector<std::uint8_t>(expect.begin(), expect.begin() + static_cast<long>(head)));
    ASSERT_EQ(env.read(static_cast<std::byte*>(p) + l.size - tail, tail),
              std::vector<std::uint8_t>(expect.begin() + static_cast<long>(probe),
                                        expect.begin() + static_cast<long>(probe + tail)));
    live_bytes -= pool.size_of(p);
    pool.deallocate(p);
    shadow.erase(it);
  };
  for (int op = 0; op < env.random_ops(); ++op) {
    const auto roll = rng() % 100;
    if (roll < 52 || shadow.empty()) {
      const std::size_t size = (rng() % 4 == 0) ? 1 + rng() % (3 * chunk) : 1 + rng() % 5000;
      const std::size_t alignment =
          alignments.size() == 1 ? alignments[0] : alignments[rng() % alignments.size()];
      void* p = alignment == 0 ? pool.allocate(size) : pool.allocate(size, alignment);
      const auto a = addr(p);
      ASSERT_EQ(a % std::max<std::size_t>(alignment, 256), 0u) << "alignment " << alignment;
      const std::size_t got = pool.size_of(p);
      ASSERT_EQ(got, (size + 255) / 256 * 256);
      ASSERT_LE(a + got, addr(pool.arena().base()) + pool.stats().extent_bytes);
      const auto next = shadow.lower_bound(a);
      if (next != shadow.end()) {
        ASSERT_LE(a + got, next->first) << "overlaps the next live allocation";
      }
      if (next != shadow.begin()) {
        const auto prev = std::prev(next);
        ASSERT_LE(prev->first + pool.size_of(reinterpret_cast<void*>(prev->first)), a)
            << "overlaps the previous live allocation";
      }
      const auto pattern_seed = static_cast<std::uint32_t>(op);
      const auto bytes = pattern(2 * probe, pattern_seed);
      const std::size_t head = std::min(probe, size);
      const std::size_t tail = std::min(probe, size - head);  // never over the head
      env.write(p, std::span(bytes).first(head));
      env.write(static_cast<std::byte*>(p) + size - tail, std::span(bytes).subspan(probe, tail));
      shadow.emplace(a, Live{size, pattern_seed});
      live_bytes += got;
    } else {
      auto it = shadow.begin();
      std::advance(it, static_cast<long>(rng() % shadow.size()));
      check_and_free(it);
      if (::testing::Test::HasFatalFailure()) return;
    }
    if (op % 1000 == 999) (void)pool.trim();
    ASSERT_EQ(pool.stats().live_allocations, shadow.size());
    ASSERT_EQ(pool.stats().allocated_bytes, live_bytes);
  }
  while (!shadow.empty()) {
    check_and_free(shadow.begin());
    if (::testing::Test::HasFatalFailure()) return;
  }
  const PoolStats s = pool.stats();
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.blocks, 1u);
  EXPECT_EQ(s.free_bytes, s.mapped_bytes);
}

TEST_P(PoolSuite, RandomizedAgainstShadowModel) {
  PersistentPool pool(backend(), PoolOptions{16384 * chunk_, 4 * chunk_, "p"});
  const std::size_t plain[] = {0};
  churn_against_shadow(pool, env(), chunk_, 42, plain);
}

// Aligned (512 to 4096) and plain allocations interleaved at random.
TEST_P(PoolSuite, RandomAlignedChurnAgainstShadowModel) {
  PersistentPool pool(backend(), PoolOptions{16384 * chunk_, 4 * chunk_, "p"});
  const std::size_t mixed[] = {0, 1, 256, 512, 1024, 2048, 4096};
  churn_against_shadow(pool, env(), chunk_, 7, mixed);
  if (HasFatalFailure()) return;
  const std::size_t mapped = pool.arena().mapped_bytes();
  EXPECT_EQ(pool.trim(), mapped);  // one free block from the base: every chunk goes
  EXPECT_EQ(pool.arena().mapped_bytes(), 0u);
}

// Alignments above 256 (up to kMaxAlignment): every pointer is aligned, allocations are disjoint
// and cost their rounded size, and once all are freed the pool is one free block again.
TEST_P(PoolSuite, AlignedAllocationsAreAlignedDisjointAndCoalesceBack) {
  PersistentPool pool(backend(), PoolOptions{64 * chunk_, 16 * chunk_, "p"});
  struct Got {
    void* p;
    std::size_t size;    // requested
    std::uint32_t seed;  // 0: no pattern written
  };
  std::vector<Got> got;
  std::size_t allocated = 0;
  std::uint32_t seed = 0;
  for (const std::size_t alignment : {512u, 1024u, 2048u, 4096u}) {
    for (const std::size_t size : {1u, 256u, 1000u, 4096u, 10000u}) {
      void* p = pool.allocate(size, alignment);
      EXPECT_EQ(addr(p) % alignment, 0u) << size << " B at alignment " << alignment;
      EXPECT_EQ(pool.size_of(p), (size + 255) / 256 * 256);
      env().write(p, pattern(size, ++seed));
      got.push_back({p, size, seed});
      void* small = pool.allocate(100);  // a plain one between them, often in a padding
      got.push_back({small, 100, 0});
    }
  }
  for (const Got& g : got) allocated += pool.size_of(g.p);
  EXPECT_EQ(pool.stats().live_allocations, got.size());
  EXPECT_EQ(pool.stats().allocated_bytes, allocated);
  std::vector<std::pair<std::uintptr_t, std::size_t>> ranges;
  for (const Got& g : got) ranges.emplace_back(addr(g.p), pool.size_of(g.p));
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    EXPECT_LE(ranges[i - 1].first + ranges[i - 1].second, ranges[i].first) << "allocations overlap";
  }
  for (const Got& g : got) {
    if (g.seed != 0) {
      EXPECT_EQ(env().read(g.p, g.size), pattern(g.size, g.seed));
    }
  }
  for (std::size_t i = 0; i < got.size(); ++i) pool.deallocate(got[(i * 7) % got.size()].p);
  const PoolStats s = pool.stats();
  EXPECT_EQ(s.live_allocations, 0u);
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.blocks, 1u);
  EXPECT_EQ(s.largest_free_block, s.mapped_bytes);
}

// The padding in front of an aligned allocation is a free block: a later allocation that fits
// takes it, and freeing merges it with its neighbours again.
TEST_P(PoolSuite, AlignmentPaddingIsReusedAndCoalesces) {
  PersistentPool pool(backend(), PoolOptions{64 * chunk_, 16 * chunk_, "p"});
  const std::uintptr_t base = addr(pool.arena().base());
  ASSERT_EQ(base % PersistentPool::kMaxAlignment, 0u);  // the arena starts on a chunk
  void* first = pool.allocate(256);
  EXPECT_EQ(addr(first), base);
  void* aligned = pool.allocate(1000, 4096);
  EXPECT_EQ(addr(aligned), base + 4096);
  EXPECT_EQ(pool.stats().blocks, 4u);  // first, the padding (free), aligned, the free tail
  EXPECT_EQ(pool.stats().allocated_bytes, 256u + 1024u);
  void* fill = pool.allocate(4096 - 256);  // exactly the padding
  EXPECT_EQ(addr(fill), base + 256);
  EXPECT_EQ(pool.stats().blocks, 4u);
  pool.deallocate(fill);
  pool.deallocate(first);  // merges with the padding in front of `aligned`
  EXPECT_EQ(pool.stats().blocks, 3u);
  EXPECT_EQ(pool.allocate(4096), first);  // the merged block, whole
  pool.deallocate(first);
  pool.deallocate(aligned);
  EXPECT_EQ(pool.stats().blocks, 1u);
  EXPECT_EQ(pool.stats().allocated_bytes, 0u);

  // Freed in the other order, and a smaller alignment placed inside a padding.
  first = pool.allocate(256);
  aligned = pool.allocate(256, 4096);
  void* inside = pool.allocate(256, 512);
  EXPECT_EQ(addr(inside) % 512, 0u);
  EXPECT_GT(addr(inside), addr(first));
  EXPECT_LT(addr(inside), addr(aligned));  // in the padding, not past the aligned block
  pool.deallocate(aligned);
  pool.deallocate(first);
  pool.deallocate(inside);
  EXPECT_EQ(pool.stats().blocks, 1u);
  EXPECT_EQ(pool.stats().free_bytes, pool.arena().mapped_bytes());
}

// Growth for an aligned request maps what it needs from the top block's start, no more; a top
// block that already fits aligned is used without growth; out of memory changes nothing.
TEST_P(PoolSuite, AlignedGrowthMapsOnlyWhatItNeeds) {
  PersistentPool pool(backend(), PoolOptions{64 * chunk_, chunk_, "p"});
  const std::uintptr_t base = addr(pool.arena().base());
  void* first = pool.allocate(chunk_ - 256);  // leaves 256 B free at the top
  const auto a = pattern(chunk_ - 256, 21);
  env().write(first, a);
  void* big = pool.allocate(chunk_, 4096);  // grows: 256 B of padding, then the aligned chunk
  EXPECT_EQ(addr(big), base + chunk_);
  EXPECT_EQ(pool.arena().mapped_bytes(), 2 * chunk_);
  EXPECT_EQ(pool.arena().base(), reinterpret_cast<void*>(base));
  EXPECT_EQ(env().read(first, a.size()), a);
  const auto b = pattern(chunk_, 22);
  env().write(big, b);
  EXPECT_EQ(env().read(big, b.size()), b);
  pool.deallocate(first);
  pool.deallocate(big);
  EXPECT_EQ(pool.stats().blocks, 1u);
  EXPECT_EQ(pool.trim(), 2 * chunk_);
  EXPECT_EQ(pool.arena().mapped_bytes(), 0u);

  // A free top block that holds the aligned request exactly, though smaller than the search size.
  PersistentPool roomy(backend(), PoolOptions{64 * chunk_, 4 * chunk_, "q"});
  void* head = roomy.allocate(4096);
  const CallCounts before = roomy.arena().calls();
  void* rest = roomy.allocate(4 * chunk_ - 4096, 4096);
  EXPECT_EQ(addr(rest), addr(head) + 4096);
  EXPECT_EQ(roomy.arena().mapped_bytes(), 4 * chunk_);
  EXPECT_EQ((roomy.arena().calls() - before).total(), 0u);
  roomy.deallocate(rest);
  roomy.deallocate(head);
  EXPECT_EQ(roomy.stats().blocks, 1u);

  // Out of memory on the aligned path names the numbers and leaves the pool as it was.
  LimitingBackend limited(backend(), 2 * chunk_);
  PersistentPool small(limited, PoolOptions{64 * chunk_, chunk_, "s"});
  void* x = small.allocate(2 * chunk_ - 256);
  const PoolStats was = small.stats();
  EXPECT_THROW((void)small.allocate(256, 4096), OutOfMemory);
  EXPECT_EQ(small.stats().blocks, was.blocks);
  EXPECT_EQ(small.stats().mapped_bytes, was.mapped_bytes);
  EXPECT_EQ(small.stats().allocated_bytes, was.allocated_bytes);
  small.deallocate(x);
  void* y = small.allocate(256, 4096);
  EXPECT_EQ(addr(y) % 4096, 0u);
  small.deallocate(y);
  EXPECT_EQ(small.stats().blocks, 1u);
}

TEST_P(PoolSuite, BadAlignmentsAreNamedErrors) {
  PersistentPool pool(backend(), PoolOptions{64 * chunk_, chunk_, "p"});
  for (const std::size_t bad : {std::size_t{0}, std::size_t{3}, std::size_t{768}, std::size_t{8192},
                                std::size_t{1} << 20}) {
    try {
      (void)pool.allocate(64, bad);
      ADD_FAILURE() << "alignment " << bad << " accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_THAT(e.what(),
                  AllOf(HasSubstr("alignment " + std::to_string(bad)), HasSubstr("4096")));
    }
  }
  EXPECT_THROW((void)pool.allocate(0, 1024), InvalidArgument);
  EXPECT_THROW((void)pool.allocate(static_cast<std::size_t>(-4096), 1024), InvalidArgument);
  EXPECT_EQ(pool.stats().live_allocations, 0u);
  EXPECT_EQ(pool.arena().mapped_bytes(), 0u);
  // Up to 256 every power of two is the plain path.
  std::vector<void*> ptrs;
  for (std::size_t alignment = 1; alignment <= 256; alignment *= 2) {
    ptrs.push_back(pool.allocate(100, alignment));
    EXPECT_EQ(addr(ptrs.back()) % 256, 0u);
  }
  for (std::size_t i = 1; i < ptrs.size(); ++i) EXPECT_EQ(addr(ptrs[i]) - addr(ptrs[i - 1]), 256u);
  for (void* p : ptrs) pool.deallocate(p);
  EXPECT_EQ(pool.stats().blocks, 1u);
}

}  // namespace
}  // namespace memplan::arena::test
