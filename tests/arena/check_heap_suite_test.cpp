// The check heap, the same on every backend: fresh addresses and pages for every allocation, the
// hand-out poison, what each address is, and the errors (exhausted addresses, bad pointers).
// Frees here are on the default stream and drained; waiting for a busy stream is tested on the
// host (check_heap_test.cpp) and on the GPU (tests/runtime/gpu_check_test.cpp).
#include "arena_suite.hpp"
#include "memplan/arena/check_heap.hpp"
#include "memplan/arena/pointer_errors.hpp"
#include "memplan/error.hpp"

#include <gmock/gmock.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace memplan::arena::test {
namespace {

using ::testing::HasSubstr;

constexpr std::uint32_t kFresh = 0x7FFA7FFAu;
constexpr std::uint32_t kFreed = 0x7FFD7FFDu;

std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

TEST_P(CheckHeapSuite, EveryAllocationGetsFreshAddressesAndPagesOfItsOwn) {
  CheckHeap heap(backend(), CheckHeapOptions{.reserve_bytes = 4096 * chunk_, .guard_gaps = true});
  const CallCounts before = backend().calls();
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges;  // every [begin, end) handed out
  const std::size_t sizes[] = {1, 100, chunk_ - 1, chunk_, chunk_ + 7, 3 * chunk_};
  const std::size_t alignments[] = {1, 4, 256, 4096, 2 * chunk_};
  int n = 0;
  for (int round = 0; round < 4; ++round) {
    for (const std::size_t bytes : sizes) {
      const std::size_t alignment = alignments[n % std::size(alignments)];
      void* p = heap.allocate(bytes, alignment, StreamRef{});
      ++n;
      EXPECT_EQ(addr(p) % alignment, 0u) << bytes << " B aligned to " << alignment;
      EXPECT_EQ(heap.region_of(p), CheckRegion::Live);
      ranges.emplace_back(addr(p), addr(p) + bytes);
      heap.deallocate(p, StreamRef{});
      heap.drain();  // the free's poison may still be queued on a GPU's default stream
      EXPECT_EQ(heap.region_of(p), CheckRegion::Released);
    }
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    // Never the same bytes twice, and never the same page: a guard granule lies between.
    EXPECT_GE(ranges[i].first, ranges[i - 1].second + chunk_) << "allocation " << i;
  }
  const CallCounts d = backend().calls() - before;
  EXPECT_EQ(d[Call::CreateChunk], static_cast<std::uint64_t>(n));
  EXPECT_EQ(d[Call::Map], static_cast<std::uint64_t>(n));
  EXPECT_EQ(d[Call::Unmap], static_cast<std::uint64_t>(n));
  EXPECT_EQ(d[Call::ReleaseChunk], static_cast<std::uint64_t>(n));
  const CheckHeapStats s = heap.stats();
  EXPECT_EQ(s.allocations, static_cast<std::size_t>(n));
  EXPECT_EQ(s.live, 0u);
  EXPECT_EQ(s.pending, 0u);
  EXPECT_EQ(s.released, static_cast<std::size_t>(n));
}

TEST_P(CheckHeapSuite, HandedOutPagesArePoisonedAndTheBufferEndsWhereTheyEnd) {
  CheckHeap heap(backend(), CheckHeapOptions{.reserve_bytes = 64 * chunk_,
                                             .guard_gaps = true,
                                             .fill_on_allocate = kFresh,
                                             .fill_on_free = kFreed});
  const std::size_t bytes = chunk_ / 2 + 12;
  void* p = heap.allocate(bytes, 4, StreamRef{});
  EXPECT_EQ(heap.allocation_at(p), p);
  const std::uintptr_t pages_end = addr(p) + bytes;  // 4-aligned size: no padding after it
  EXPECT_EQ(pages_end % chunk_, 0u);
  EXPECT_EQ(heap.region_of(reinterpret_cast<void*>(pages_end)), CheckRegion::Unused);
  const std::uintptr_t pages_begin = pages_end - chunk_;
  EXPECT_EQ(heap.allocation_at(reinterpret_cast<void*>(pages_begin)), p);
  // The whole page, padding before the buffer included, holds the hand-out poison.
  const std::vector<std::uint8_t> page = env().read(reinterpret_cast<void*>(pages_begin), chunk_);
  for (std::size_t i = 0; i < chunk_; i += 4) {
    std::uint32_t word = 0;
    std::memcpy(&word, page.data() + i, 4);
    ASSERT_EQ(word, kFresh) << "byte " << i << " of the page";
  }
  heap.deallocate(p, StreamRef{});
  heap.drain();
  EXPECT_EQ(heap.region_of(p), CheckRegion::Released);
}

TEST_P(CheckHeapSuite, RegionsNameGapsUnusedPagesAndOutside) {
  CheckHeap heap(backend(), CheckHeapOptions{.reserve_bytes = 64 * chunk_, .guard_gaps = true});
  void* a = heap.allocate(chunk_, 256, StreamRef{});
  void* b = heap.allocate(chunk_, 256, StreamRef{});
  EXPECT_EQ(heap.region_of(static_cast<std::byte*>(a) - 1), CheckRegion::Gap);
  EXPECT_EQ(heap.region_of(static_cast<std::byte*>(a) + chunk_), CheckRegion::Gap);
  EXPECT_EQ(heap.region_of(static_cast<std::byte*>(b) + chunk_), CheckRegion::Unused);
  EXPECT_EQ(heap.region_of(heap.base()), CheckRegion::Gap);  // the guard before the first
  EXPECT_EQ(heap.region_of(&heap), CheckRegion::Outside);
  EXPECT_EQ(heap.allocation_at(static_cast<std::byte*>(a) + chunk_), nullptr);
  heap.deallocate(a, StreamRef{});
  heap.deallocate(b, StreamRef{});

  CheckHeap packed(backend(), CheckHeapOptions{.reserve_bytes = 64 * chunk_, .guard_gaps = false});
  void* c = packed.allocate(chunk_, 256, StreamRef{});
  void* d = packed.allocate(chunk_, 256, StreamRef{});
  EXPECT_EQ(addr(d), addr(c) + chunk_);  // without guard gaps the pages touch; still never reused
  EXPECT_EQ(c, packed.base());
  packed.deallocate(c, StreamRef{});
  packed.deallocate(d, StreamRef{});
}

TEST_P(CheckHeapSuite, ExhaustedAddressSpaceIsAClearErrorAndTheHeapStaysUsable) {
  // 8 granules with guard gaps: guard, allocation, gap, allocation, gap, allocation, gap,
  // allocation: 4 fit.
  CheckHeap heap(backend(), CheckHeapOptions{.reserve_bytes = 8 * chunk_, .guard_gaps = true});
  std::vector<void*> got;
  try {
    for (int i = 0; i < 100; ++i) got.push_back(heap.allocate(chunk_, 4, StreamRef{}));
    FAIL() << "100 allocations fitted in 8 granules";
  } catch (const OutOfMemory& e) {
    EXPECT_THAT(e.what(), HasSubstr("address space exhausted"));
    EXPECT_THAT(e.what(), HasSubstr("after 4 allocations"));
    EXPECT_THAT(e.what(), HasSubstr("reserve more"));
  }
  ASSERT_EQ(got.size(), 4u);
  const CallCounts before = backend().calls();
  for (void* p : got) heap.deallocate(p, StreamRef{});
  heap.drain();
  // Freeing gives pages back, never addresses.
  EXPECT_EQ((backend().calls() - before)[Call::ReleaseChunk], 4u);
  EXPECT_THROW((void)heap.allocate(chunk_, 4, StreamRef{}), OutOfMemory);
  EXPECT_EQ(heap.stats().live, 0u);
}

TEST_P(CheckHeapSuite, BadArgumentsAndPointersAreNamedAndChangeNothing) {
  CheckHeap heap(backend(), CheckHeapOptions{.reserve_bytes = 64 * chunk_});
  EXPECT_THROW((void)heap.allocate(0, 4, StreamRef{}), InvalidArgument);
  EXPECT_THROW((void)heap.allocate(8, 3, StreamRef{}), InvalidArgument);
  void* p = heap.allocate(64, 4, StreamRef{});
  try {
    heap.deallocate(static_cast<std::byte*>(p) + 8, StreamRef{});
    FAIL() << "an interior pointer was freed";
  } catch (const ForeignPointer& e) {
    EXPECT_THAT(e.what(), HasSubstr("8 B from its start"));
  }
  int local = 0;
  EXPECT_THROW(heap.deallocate(&local, StreamRef{}), ForeignPointer);
  EXPECT_THROW(heap.deallocate(heap.base(), StreamRef{}), ForeignPointer);  // a guard gap
  EXPECT_EQ(heap.stats().live, 1u);
  heap.deallocate(p, StreamRef{});
  try {
    heap.deallocate(p, StreamRef{});
    FAIL() << "a double free went through";
  } catch (const DoubleFree& e) {
    EXPECT_THAT(e.what(), HasSubstr("freed already"));
  }
  EXPECT_THROW(CheckHeap(backend(), CheckHeapOptions{.reserve_bytes = 0}), InvalidArgument);
}

}  // namespace
}  // namespace memplan::arena::test
