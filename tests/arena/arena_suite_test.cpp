// Arena behaviour, the same on every backend: growth at a fixed base, data kept in mapped chunks,
// trim and release, aliasing, exact call counts, and every error path.
#include "arena_suite.hpp"
#include "memplan/arena/limiting_backend.hpp"
#include "memplan/error.hpp"

#include <gmock/gmock.h>

#include <array>

namespace memplan::arena::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::byte* at(const Arena& arena, std::size_t offset) {
  return static_cast<std::byte*>(arena.address(offset));
}

TEST_P(ArenaSuite, ReserveRoundsUpToChunksAndMapsNothing) {
  Arena arena(backend(), ArenaOptions{chunk_, "t"});
  const CallCounts before = arena.calls();
  arena.reserve(3 * chunk_ + 1);
  EXPECT_EQ(arena.reserved_bytes(), 4 * chunk_);
  EXPECT_EQ(arena.mapped_bytes(), 0u);
  EXPECT_NE(arena.base(), nullptr);
  const CallCounts d = arena.calls() - before;
  EXPECT_EQ(d[Call::ReserveVa], 1u);
  EXPECT_EQ(d.total(), 1u);
}

TEST_P(ArenaSuite, ChunkSizeRoundsUpToGranularity) {
  Arena arena(backend(), 4 * chunk_, ArenaOptions{chunk_ + 1, "t"});
  EXPECT_EQ(arena.chunk_bytes(), 2 * chunk_);
}

TEST_P(ArenaSuite, GrowthKeepsBaseAndCountsEveryCall) {
  Arena arena(backend(), 8 * chunk_, ArenaOptions{chunk_, "t"});
  void* const base = arena.base();
  const CallCounts start = arena.calls();

  arena.ensure_mapped(1);
  EXPECT_EQ(arena.mapped_bytes(), chunk_);
  EXPECT_EQ(arena.mapped_chunks(), 1u);
  arena.ensure_mapped(3 * chunk_);
  EXPECT_EQ(arena.mapped_bytes(), 3 * chunk_);
  EXPECT_EQ(arena.base(), base);

  const CallCounts grew = arena.calls() - start;
  EXPECT_EQ(grew[Call::CreateChunk], 3u);
  EXPECT_EQ(grew[Call::Map], 3u);
  EXPECT_EQ(grew[Call::SetAccess], 2u);  // one per growth, over the whole new range
  EXPECT_EQ(grew.memory_calls(), 8u);
  EXPECT_EQ(grew.total(), 8u);

  // Already mapped: no backend call at all (what replay relies on).
  const CallCounts steady = arena.calls();
  arena.ensure_mapped(0);
  arena.ensure_mapped(chunk_);
  arena.ensure_mapped(3 * chunk_);
  EXPECT_EQ((arena.calls() - steady).total(), 0u);
}

TEST_P(ArenaSuite, DataInMappedChunksSurvivesGrowth) {
  Arena arena(backend(), 8 * chunk_, ArenaOptions{chunk_, "t"});
  arena.ensure_mapped(2 * chunk_);
  const auto a = pattern(2 * chunk_, 1);
  env().write(arena.base(), a);
  arena.ensure_mapped(8 * chunk_);
  EXPECT_EQ(env().read(arena.base(), 2 * chunk_), a);
  // The new chunks continue the old ones without a seam.
  const auto b = pattern(3 * chunk_, 2);
  env().write(at(arena, chunk_ + chunk_ / 2), b);
  EXPECT_EQ(env().read(at(arena, chunk_ + chunk_ / 2), b.size()), b);
}

TEST_P(ArenaSuite, TrimUnmapsWholeChunksAboveAndKeepsTheRest) {
  Arena arena(backend(), 8 * chunk_, ArenaOptions{chunk_, "t"});
  arena.ensure_mapped(5 * chunk_);
  const auto a = pattern(chunk_, 3);
  env().write(arena.base(), a);
  const CallCounts before = arena.calls();

  arena.trim(chunk_ + 1);  // keeps two chunks
  EXPECT_EQ(arena.mapped_chunks(), 2u);
  EXPECT_EQ(arena.mapped_bytes(), 2 * chunk_);
  const CallCounts d = arena.calls() - before;
  EXPECT_EQ(d[Call::Unmap], 1u);  // one call for the contiguous range
  EXPECT_EQ(d[Call::ReleaseChunk], 3u);
  EXPECT_EQ(d.total(), 4u);  // no users registered: no fences
  EXPECT_EQ(env().read(arena.base(), chunk_), a);

  const CallCounts idle = arena.calls();
  arena.trim(2 * chunk_);
  arena.trim(100 * chunk_);
  EXPECT_EQ((arena.calls() - idle).total(), 0u);
}

TEST_P(ArenaSuite, ReleaseKeepsAddressesAndMapsBackThere) {
  Arena arena(backend(), 4 * chunk_, ArenaOptions{chunk_, "t"});
  void* const base = arena.base();
  arena.ensure_mapped(4 * chunk_);
  arena.release();
  EXPECT_EQ(arena.mapped_bytes(), 0u);
  EXPECT_EQ(arena.mapped_chunks(), 0u);
  EXPECT_EQ(arena.reserved_bytes(), 4 * chunk_);
  EXPECT_EQ(arena.base(), base);

  arena.ensure_mapped(4 * chunk_);
  EXPECT_EQ(arena.base(), base);
  const auto a = pattern(4 * chunk_, 4);
  env().write(base, a);
  EXPECT_EQ(env().read(base, a.size()), a);
}

TEST_P(ArenaSuite, RangesAwayFromTheBaseMapOnlyTheirOwnChunks) {
  Arena arena(backend(), 8 * chunk_, ArenaOptions{chunk_, "t"});
  arena.ensure_mapped(5 * chunk_ + 1, chunk_);  // touches slots 5 and 6
  EXPECT_EQ(arena.mapped_chunks(), 2u);
  EXPECT_FALSE(arena.is_mapped(0));
  EXPECT_TRUE(arena.is_mapped(5 * chunk_));
  EXPECT_TRUE(arena.is_mapped(7 * chunk_ - 1));
  const auto a = pattern(chunk_, 8);
  env().write(at(arena, 5 * chunk_ + 1), a);

  const CallCounts steady = arena.calls();
  arena.ensure_mapped(5 * chunk_ + 1, chunk_);  // what the last growth mapped: no call
  EXPECT_EQ((arena.calls() - steady).total(), 0u);

  arena.ensure_mapped(chunk_);  // the prefix too: slots 5 and 6 keep their bytes
  EXPECT_EQ(arena.mapped_chunks(), 3u);
  EXPECT_EQ(env().read(at(arena, 5 * chunk_ + 1), a.size()), a);
  arena.trim(6 * chunk_);  // slot 6 is wholly above
  EXPECT_EQ(arena.mapped_chunks(), 2u);
  EXPECT_FALSE(arena.is_mapped(6 * chunk_));
  EXPECT_THROW(arena.ensure_mapped(7 * chunk_, 2 * chunk_), OutOfMemory);  // past the end
  EXPECT_THROW(arena.ensure_mapped(1, ~std::size_t{0}), InvalidArgument);
  EXPECT_EQ(arena.mapped_chunks(), 2u);
}

TEST_P(ArenaSuite, KeepOnlyUnmapsEveryChunkOutsideTheRangesInRuns) {
  Arena arena(backend(), 8 * chunk_, ArenaOptions{chunk_, "t"});
  arena.ensure_mapped(8 * chunk_);
  const auto a = pattern(16, 9);
  env().write(at(arena, 3 * chunk_ + 8), a);
  const CallCounts before = arena.calls();
  const std::array<ByteRange, 2> keep{{{3 * chunk_ + 8, 16}, {6 * chunk_, chunk_}}};
  arena.keep_only(keep);
  EXPECT_EQ(arena.mapped_chunks(), 2u);
  EXPECT_TRUE(arena.is_mapped(3 * chunk_));
  EXPECT_TRUE(arena.is_mapped(6 * chunk_));
  EXPECT_EQ(env().read(at(arena, 3 * chunk_ + 8), a.size()), a);
  const CallCounts d = arena.calls() - before;
  EXPECT_EQ(d[Call::Unmap], 3u);  // slots 0-2, 4-5 and 7: one call per run
  EXPECT_EQ(d[Call::ReleaseChunk], 6u);
}

// What the runtime asks before a step after trim_to left holes: whether a range is mapped
// throughout, with no backend call; ensure_mapped then fills only the holes.
TEST_P(ArenaSuite, MappedThroughoutSeesHolesAndEnsureMappedFillsOnlyThem) {
  Arena arena(backend(), 8 * chunk_, ArenaOptions{chunk_, "t"});
  arena.ensure_mapped(6 * chunk_);
  EXPECT_TRUE(arena.mapped_throughout(0, 6 * chunk_));  // the last growth: one test
  const auto a = pattern(16, 12);
  env().write(at(arena, 4 * chunk_), a);
  const std::array<ByteRange, 2> keep{{{0, chunk_}, {4 * chunk_, 2 * chunk_}}};
  arena.keep_only(keep);  // holes at slots 1-3
  const CallCounts before = arena.calls();
  EXPECT_FALSE(arena.mapped_throughout(0, 6 * chunk_));
  EXPECT_FALSE(arena.mapped_throughout(chunk_ - 1, 2));  // slot 0 and slot 1
  EXPECT_TRUE(arena.mapped_throughout(4 * chunk_ + 1, 2 * chunk_ - 1));
  EXPECT_TRUE(arena.mapped_throughout(chunk_, 0));
  EXPECT_FALSE(arena.mapped_throughout(5 * chunk_, 2 * chunk_));  // slot 6 never was
  EXPECT_EQ((arena.calls() - before).total(), 0u);
  arena.ensure_mapped(6 * chunk_);
  const CallCounts d = arena.calls() - before;
  EXPECT_EQ(d[Call::CreateChunk], 3u);
  EXPECT_EQ(d[Call::Map], 3u);
  EXPECT_EQ(d[Call::SetAccess], 1u);  // slots 1-3, one run
  EXPECT_TRUE(arena.mapped_throughout(0, 6 * chunk_));
  EXPECT_EQ(env().read(at(arena, 4 * chunk_), a.size()), a);
}

// What the runtime does when a rogue holds a chunk of its plan: the plan moves to slots clear of
// the rogue, on the physical chunks the plan leaves, so the move costs the rogue's chunk only.
TEST_P(ArenaSuite, RemapMovesMemoryToNewSlotsWithoutNewChunks) {
  LimitingBackend limited(backend(), 5 * chunk_);
  Arena arena(limited, 16 * chunk_, ArenaOptions{chunk_, "t"});
  arena.ensure_mapped(4 * chunk_);  // the plan, slots 0-3; a rogue lives in slot 1
  const auto rogue = pattern(64, 10);
  env().write(at(arena, chunk_ + 64), rogue);
  const CallCounts before = limited.calls();
  const std::array<ByteRange, 2> keep{{{chunk_ + 64, 64}, {2 * chunk_, 4 * chunk_}}};
  arena.remap(keep);  // the plan moves to slots 2-5
  const CallCounts d = limited.calls() - before;
  // Slot 4 takes slot 0's chunk; only slot 5 needs a fresh one: the plan's 4 chunks + the rogue's.
  EXPECT_EQ(d[Call::CreateChunk], 1u);
  EXPECT_EQ(d[Call::ReleaseChunk], 0u);
  EXPECT_EQ(d[Call::Unmap], 1u);         // slot 0
  EXPECT_EQ(arena.mapped_chunks(), 5u);  // slots 1 (the rogue), 2, 3, 4, 5
  EXPECT_FALSE(arena.is_mapped(0));
  EXPECT_EQ(limited.used_bytes(), 5 * chunk_);
  EXPECT_EQ(env().read(at(arena, chunk_ + 64), rogue.size()), rogue);
  const auto plan = pattern(4 * chunk_, 11);
  env().write(at(arena, 2 * chunk_), plan);
  EXPECT_EQ(env().read(at(arena, 2 * chunk_), plan.size()), plan);
  EXPECT_EQ(env().read(at(arena, chunk_ + 64), rogue.size()), rogue);  // not aliased by the plan

  // Nothing left to take: fresh chunks, up to the limit, then OutOfMemory and no change.
  const std::array<ByteRange, 2> wider{{{chunk_ + 64, 64}, {2 * chunk_, 6 * chunk_}}};
  EXPECT_THROW(arena.remap(wider), OutOfMemory);
  EXPECT_EQ(arena.mapped_chunks(), 5u);
  EXPECT_EQ(limited.used_bytes(), 5 * chunk_);
  EXPECT_EQ(env().read(at(arena, chunk_ + 64), rogue.size()), rogue);
  arena.release();
  EXPECT_EQ(limited.used_bytes(), 0u);
}

TEST_P(ArenaSuite, ChunksAliasLikeVmm) {
  PhysicalBackend& b = backend();
  const std::size_t n = chunk_;
  void* x = b.reserve_va(n);
  void* y = b.reserve_va(n);
  const ChunkHandle chunk = b.create_chunk(n);
  b.map(x, n, chunk);
  b.map(y, n, chunk);
  b.set_access(x, n);
  b.set_access(y, n);
  const auto a = pattern(n, 5);
  env().write(x, a);
  EXPECT_EQ(env().read(y, n), a);
  const auto c = pattern(64, 6);
  env().write(static_cast<std::byte*>(y) + 128, c);
  EXPECT_EQ(env().read(static_cast<std::byte*>(x) + 128, 64), c);
  b.unmap(x, n);
  b.unmap(y, n);
  b.release_chunk(chunk);
  b.free_va(x, n);
  b.free_va(y, n);
  const CallCounts d = b.calls();
  EXPECT_EQ(d[Call::ReserveVa], 2u);
  EXPECT_EQ(d[Call::Map], 2u);
  EXPECT_EQ(d[Call::Unmap], 2u);
  EXPECT_EQ(d[Call::FreeVa], 2u);
}

TEST_P(ArenaSuite, UsersAreFencedBeforeUnmapOnly) {
  Arena arena(backend(), 4 * chunk_, ArenaOptions{chunk_, "t"});
  arena.add_user(StreamRef{});
  arena.add_user(StreamRef{});  // twice: still one user
  EXPECT_EQ(arena.users().size(), 1u);
  arena.ensure_mapped(2 * chunk_);
  CallCounts d = arena.calls();
  EXPECT_EQ(d[Call::CreateFence], 1u);
  EXPECT_EQ(d[Call::RecordFence], 0u);  // growth never waits

  arena.trim(chunk_);
  d = arena.calls();
  EXPECT_EQ(d[Call::RecordFence], 1u);
  EXPECT_EQ(d[Call::WaitFence], 1u);

  arena.trim(chunk_);  // nothing to unmap: no wait either
  EXPECT_EQ(arena.calls()[Call::WaitFence], 1u);

  arena.remove_user(StreamRef{});
  d = arena.calls();
  EXPECT_EQ(d[Call::WaitFence], 2u);
  EXPECT_EQ(d[Call::DestroyFence], 1u);
  EXPECT_THROW(arena.remove_user(StreamRef{}), InvalidArgument);
}

TEST_P(ArenaSuite, BadArgumentsAreNamedErrors) {
  EXPECT_THROW(Arena(backend(), ArenaOptions{0, "t"}), InvalidArgument);
  Arena arena(backend(), ArenaOptions{chunk_, "t"});
  EXPECT_THROW(arena.ensure_mapped(1), InvalidState);
  try {
    arena.reserve(0);
    FAIL() << "reserve(0) accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("zero"));
  }
  try {
    arena.reserve(~std::size_t{0} - 10);
    FAIL() << "absurd reserve accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("absurd"));
  }
  arena.reserve(2 * chunk_);
  EXPECT_THROW(arena.reserve(2 * chunk_), InvalidState);
  EXPECT_THROW(arena.ensure_mapped(~std::size_t{0}), InvalidArgument);
}

TEST_P(ArenaSuite, MappingPastTheReservationIsOutOfMemoryWithNumbers) {
  Arena arena(backend(), 2 * chunk_, ArenaOptions{chunk_, "t"});
  arena.ensure_mapped(chunk_);
  try {
    arena.ensure_mapped(3 * chunk_);
    FAIL() << "mapped past the reservation";
  } catch (const OutOfMemory& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("requested"), HasSubstr("mapped"), HasSubstr("reserved"),
                                HasSubstr("free"), HasSubstr(std::to_string(3 * chunk_))));
  }
  EXPECT_EQ(arena.mapped_bytes(), chunk_);
  arena.ensure_mapped(2 * chunk_);  // still usable
  EXPECT_EQ(arena.mapped_bytes(), 2 * chunk_);
}

TEST_P(ArenaSuite, BackendOutOfMemoryRollsBackAndLeavesArenaUsable) {
  LimitingBackend limited(backend(), 3 * chunk_);
  Arena arena(limited, 8 * chunk_, ArenaOptions{chunk_, "t"});
  arena.ensure_mapped(chunk_);
  const CallCounts before = limited.calls();
  try {
    arena.ensure_mapped(5 * chunk_);
    FAIL() << "limit not enforced";
  } catch (const OutOfMemory& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("requested"), HasSubstr(std::to_string(5 * chunk_)),
                                HasSubstr("mapped"), HasSubstr("reserved"), HasSubstr("free"),
                                HasSubstr("limit")));
  }
  // Two chunks were made and mapped, the third refused; both were undone in one unmap.
  const CallCounts d = limited.calls() - before;
  EXPECT_EQ(d[Call::CreateChunk], 3u);
  EXPECT_EQ(d[Call::Map], 2u);
  EXPECT_EQ(d[Call::Unmap], 1u);
  EXPECT_EQ(d[Call::ReleaseChunk], 2u);
  EXPECT_EQ(arena.mapped_bytes(), chunk_);
  EXPECT_EQ(limited.used_bytes(), chunk_);

  arena.ensure_mapped(3 * chunk_);
  EXPECT_EQ(arena.mapped_bytes(), 3 * chunk_);
  const auto a = pattern(3 * chunk_, 7);
  env().write(arena.base(), a);
  EXPECT_EQ(env().read(arena.base(), a.size()), a);
}

// A slot that borrows another arena's chunk maps that chunk (the two alias), counts none of it
// as its own, never hands it to another slot and never releases it; the owner's bytes outlive
// every unmapping on the borrowing side.
TEST_P(ArenaSuite, ABorrowedChunkAliasesItsOwnersAndIsNeverReleasedOrReused) {
  Arena owner(backend(), 4 * chunk_, ArenaOptions{chunk_, "owner"});
  owner.ensure_mapped(chunk_);
  const auto owners = pattern(256, 20);
  env().write(at(owner, 0), owners);
  {
    Arena arena(backend(), 8 * chunk_, ArenaOptions{chunk_, "t"});
    arena.ensure_mapped(2 * chunk_);  // slot 0 has a chunk of its own: borrow() swaps it
    const CallCounts before = backend().calls();
    arena.borrow(0, owner.chunk_at(0));
    const CallCounts d = backend().calls() - before;
    EXPECT_EQ(d[Call::ReleaseChunk], 1u);  // its own chunk went
    EXPECT_EQ(d[Call::CreateChunk], 0u);
    EXPECT_TRUE(arena.borrows(chunk_ / 2));
    EXPECT_EQ(arena.mapped_chunks(), 2u);
    EXPECT_EQ(arena.mapped_bytes(), chunk_);  // slot 1 only: slot 0 is the owner's
    EXPECT_EQ(env().read(at(arena, 0), owners.size()), owners);
    const auto mine = pattern(256, 21);
    env().write(at(arena, chunk_ - 256), mine);  // the borrower's end of the chunk
    EXPECT_EQ(env().read(at(owner, chunk_ - 256), mine.size()), mine);

    // A remap that needs a chunk for slot 5 and leaves slots 0 and 1 takes slot 1's, never the
    // borrowed one; the borrowed slot is unmapped without a release.
    const CallCounts before_move = backend().calls();
    const ByteRange keep{5 * chunk_, chunk_};
    arena.remap({&keep, 1});
    const CallCounts moved = backend().calls() - before_move;
    EXPECT_EQ(moved[Call::CreateChunk], 0u);
    EXPECT_EQ(moved[Call::ReleaseChunk], 0u);  // slot 1's chunk moved; the borrowed one stays
    EXPECT_FALSE(arena.is_mapped(0));
    EXPECT_EQ(arena.mapped_bytes(), chunk_);
    EXPECT_EQ(env().read(at(owner, 0), owners.size()), owners);

    // Mapped again, the slot maps the borrowed chunk, not a fresh one.
    const CallCounts before_back = backend().calls();
    arena.ensure_mapped(0, 64);
    EXPECT_EQ((backend().calls() - before_back)[Call::CreateChunk], 0u);
    EXPECT_EQ(env().read(at(arena, chunk_ - 256), mine.size()), mine);
    EXPECT_THROW(arena.borrow(0, owner.chunk_at(0)), InvalidState);  // one loan per slot
  }  // destruction unmaps the borrowed slot without releasing it
  EXPECT_EQ(env().read(at(owner, 0), owners.size()), owners);
  EXPECT_EQ(owner.mapped_bytes(), chunk_);
}

TEST_P(ArenaSuite, EndBorrowUnmapsWithoutReleaseAndTheSlotGetsAChunkOfItsOwnAgain) {
  Arena owner(backend(), 4 * chunk_, ArenaOptions{chunk_, "owner"});
  owner.ensure_mapped(chunk_);
  const auto owners = pattern(512, 22);
  env().write(at(owner, 0), owners);
  Arena arena(backend(), 4 * chunk_, ArenaOptions{chunk_, "t"});
  arena.borrow(0, owner.chunk_at(0));  // not mapped yet: nothing happens now
  EXPECT_EQ(arena.mapped_chunks(), 0u);
  arena.ensure_mapped(2 * chunk_);
  EXPECT_EQ(arena.mapped_bytes(), chunk_);
  const CallCounts before = backend().calls();
  arena.end_borrow(0);
  const CallCounts d = backend().calls() - before;
  EXPECT_EQ(d[Call::Unmap], 1u);
  EXPECT_EQ(d[Call::ReleaseChunk], 0u);
  EXPECT_FALSE(arena.borrows(0));
  EXPECT_FALSE(arena.is_mapped(0));
  arena.end_borrow(0);  // no loan there: a no-op
  arena.ensure_mapped(chunk_);
  EXPECT_EQ(arena.mapped_bytes(), 2 * chunk_);  // a fresh chunk of its own
  env().fill(at(arena, 0), 512, 0xAB);
  EXPECT_EQ(env().read(at(owner, 0), owners.size()), owners);
  EXPECT_THROW((void)arena.chunk_at(3 * chunk_), InvalidArgument);
  EXPECT_THROW(arena.borrow(4 * chunk_, owner.chunk_at(0)), InvalidArgument);
}

TEST_P(ArenaSuite, DestructionUnmapsAndFreesEverything) {
  const CallCounts before = backend().calls();
  {
    Arena arena(backend(), 4 * chunk_, ArenaOptions{chunk_, "t"});
    arena.add_user(StreamRef{});
    arena.ensure_mapped(3 * chunk_);
  }
  const CallCounts d = backend().calls() - before;
  EXPECT_EQ(d[Call::CreateChunk], d[Call::ReleaseChunk]);
  EXPECT_EQ(d[Call::ReserveVa], d[Call::FreeVa]);
  EXPECT_EQ(d[Call::CreateFence], d[Call::DestroyFence]);
  EXPECT_EQ(d[Call::WaitFence], 1u);
}

}  // namespace
}  // namespace memplan::arena::test
