// The persistent pool: long-lived allocations (pause scopes, learned rogue sites) carved from an
// arena of their own. Best fit over TLSF size classes with immediate coalescing and 256-byte
// granules, so a small allocation costs near its own size, never a chunk. The bookkeeping is all
// on the host (device memory holds no headers). When nothing fits, the arena maps more chunks at
// its top and the top free block grows into them. trim() hands back the whole free chunks at the
// top, which shrinks the pool, and those inside free blocks below it (holes: what a model's
// construction freed below its weights); while a hole is unmapped, an allocation looks up its
// range's chunks and maps the missing ones first (no backend call where none is missing).
// Alignments above 256 (up to 4096, the compiler's limit) take a block with room for the worst
// padding and give the padding in front back as a free block of its own, so it is reused and
// coalesces like any other.
//
// The pool may lend the free tail of a chunk it partly uses (lend()): the planned arena maps that
// chunk as its first and starts its plans past the pool's bytes, so that the two do not each pad a
// chunk of their own. The lent bytes are a block of their own, neither free nor live.
//
// allocate()/deallocate() below are the hot path: inline, no backend call, no system allocation
// in the steady state. Growth, errors, statistics and alignments above 256 are out of line.
//
// Thread safety: none inside, like Arena; the runtime calls it from its step thread. deallocate()
// makes memory reusable at once: callers free only what no queued work still touches.
#pragma once

#include "memplan/arena/arena.hpp"
#include "memplan/arena/detail/block_store.hpp"
#include "memplan/arena/detail/free_lists.hpp"
#include "memplan/arena/detail/live_table.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace memplan::arena {

struct PoolOptions {
  std::size_t reserve_bytes = 64 * kGiB;  // address space only; physical memory comes by chunks
  std::size_t chunk_bytes = 64 * kMiB;
  std::string name = "persistent pool";
};

struct PoolStats {
  std::size_t live_allocations = 0;
  std::size_t allocated_bytes = 0;  // sum of live sizes, each rounded up to 256
  std::size_t free_bytes = 0;       // mapped, neither allocated nor lent
  std::size_t lent_bytes = 0;       // lent to another arena (lend())
  std::size_t largest_free_block = 0;
  std::size_t mapped_bytes = 0;
  std::size_t extent_bytes = 0;  // the blocks' span from the base: mapped chunks and holes
  std::size_t reserved_bytes = 0;
  std::size_t blocks = 0;  // live and free, as the pool tracks them
};

class PersistentPool {
 public:
  static constexpr std::size_t kAlignment = 256;  // of every allocation, and its size granule
  static constexpr std::size_t kMaxAlignment =
      4096;  // allocate(bytes, alignment) accepts up to this
  // Anything larger is a bug (a negative size cast to size_t, say): InvalidArgument, not OOM.
  static constexpr std::size_t kMaxRequestBytes = std::size_t{1} << 47;

  PersistentPool(PhysicalBackend& backend, PoolOptions options = {});
  PersistentPool(const PersistentPool&) = delete;
  PersistentPool& operator=(const PersistentPool&) = delete;
  ~PersistentPool();  // logs allocations still live; the arena then unmaps everything

  // `bytes` rounded up to 256, aligned to 256. Throws InvalidArgument for 0 or absurd sizes and
  // OutOfMemory (requested, mapped, reserved, free) when the arena cannot grow; the pool stays
  // usable after either.
  void* allocate(std::size_t bytes) {
    if (bytes - 1 >= kMaxRequestBytes) [[unlikely]]
      throw_bad_size(bytes);
    const std::uint64_t size = (bytes + (kAlignment - 1)) & ~std::uint64_t{kAlignment - 1};
    std::uint32_t b = free_.find(blocks_, size);
    if (b == detail::kNone) [[unlikely]]
      b = grow_for(size);
    if (arena_.mapped_bytes() != end_) [[unlikely]]  // trim() left holes, some still unmapped
      map_hole(blocks_[b].offset, size);
    return take(b, size);
  }

  // The same, aligned to `alignment`: a power of two up to kMaxAlignment (else InvalidArgument
  // naming it). Up to 256 this is allocate(bytes); above, the search asks for the size plus the
  // worst padding, and the padding in front stays free.
  void* allocate(std::size_t bytes, std::size_t alignment) {
    if ((alignment & (alignment - 1)) == 0 && alignment - 1 < kAlignment) [[likely]] {
      return allocate(bytes);
    }
    return allocate_aligned(bytes, alignment);
  }

  // allocate(bytes, alignment) when a free block holds it, so that the pool does not grow;
  // nullptr otherwise.
  void* allocate_if_free(std::size_t bytes, std::size_t alignment);

  // Frees what allocate() returned; nullptr is ignored. A pointer not from this pool throws
  // ForeignPointer, one already freed DoubleFree.
  void deallocate(void* p) {
    if (p == nullptr) return;
    const std::uint64_t offset = reinterpret_cast<std::uintptr_t>(p) - base_;
    if (offset >= arena_.reserved_bytes()) [[unlikely]]
      throw_bad_pointer(p);
    const std::uint32_t b = live_.take(offset);
    if (b == detail::kNone) [[unlikely]]
      throw_bad_pointer(p);
    give_back(b);
  }

  // The usable size of a live allocation (its request rounded up to 256; alignment padding is not
  // part of it); throws like deallocate.
  std::size_t size_of(const void* p) const;
  bool owns(const void* p) const noexcept { return arena_.contains(p); }

  // Unmaps the whole chunks that are free: at the top of the pool (it shrinks) and inside free
  // blocks below (holes, mapped again when an allocation needs them); returns the bytes unmapped.
  std::size_t trim();

  // The bytes [from, chunk_bytes) of one chunk lent out: `chunk` is its physical chunk, mapped
  // at `chunk_offset` in the pool.
  struct Loan {
    ChunkHandle chunk = 0;
    std::size_t chunk_offset = 0;
    std::size_t from = 0;
  };
  // Where in its chunk a loan could start: the pool's bytes there, and those it used since the
  // last trim(), end at this offset (a multiple of 256, above 0) and the rest of the chunk is free.
  // The chunk is the current loan's (as if it were returned) when one is out, else the top chunk;
  // nullopt when that chunk holds no pool byte, or is all the pool's, or a free block in it does
  // not reach its end.
  std::optional<std::size_t> lendable_from() const;
  // Lends [from, chunk_bytes) of that chunk (from: a multiple of 256, at or above
  // lendable_from(); else InvalidArgument). With a loan out, it moves to start at `from`: the
  // same chunk. The pool never allocates from lent bytes.
  Loan lend(std::size_t from);
  // Takes the lent bytes back as free memory; no-op without a loan.
  void end_loan();
  const std::optional<Loan>& loan() const noexcept { return loan_; }

  PoolStats stats() const;
  // Bytes of the live allocations (each rounded up to 256), without the rest of stats().
  std::size_t allocated_bytes() const noexcept { return allocated_; }
  Arena& arena() noexcept { return arena_; }
  const Arena& arena() const noexcept { return arena_; }

 private:
  void* take(std::uint32_t b, std::uint64_t size) {
    free_.remove(blocks_, b);
    const std::uint64_t rest = blocks_[b].size - size;
    if (rest != 0) split(b, size, rest);
    const std::uint64_t offset = blocks_[b].offset;
    live_.insert(offset, b);
    ++live_count_;
    allocated_ += size;
    high_water_ = std::max(high_water_, offset + size);
    return reinterpret_cast<void*>(base_ + offset);
  }

  void split(std::uint32_t b, std::uint64_t size, std::uint64_t rest) {
    const std::uint32_t r = blocks_.make();  // may move blocks_: index, don't hold references
    detail::Block& tail = blocks_[r];
    detail::Block& head = blocks_[b];
    tail.offset = head.offset + size;
    tail.size = rest;
    tail.prev_phys = b;
    tail.next_phys = head.next_phys;
    if (head.next_phys != detail::kNone)
      blocks_[head.next_phys].prev_phys = r;
    else
      top_ = r;
    head.next_phys = r;
    head.size = size;
    free_.insert(blocks_, r);
  }

  void give_back(std::uint32_t b) {
    --live_count_;
    allocated_ -= blocks_[b].size;
    make_free(b);
  }

  // Coalesces block `b`, in no free list, with its free neighbours and files the result.
  void make_free(std::uint32_t b) {
    const std::uint32_t next = blocks_[b].next_phys;
    if (next != detail::kNone && blocks_[next].free()) absorb_next(b, next);
    const std::uint32_t prev = blocks_[b].prev_phys;
    if (prev != detail::kNone && blocks_[prev].free()) {
      absorb_next(prev, b);  // b is not in a free list: only prev needs to leave and come back
      b = prev;
    }
    free_.insert(blocks_, b);
  }

  // Merges `next` (its right neighbour) into `b`; whichever of them is in a free list leaves it.
  void absorb_next(std::uint32_t b, std::uint32_t next) {
    if (blocks_[b].free()) free_.remove(blocks_, b);
    if (blocks_[next].free()) free_.remove(blocks_, next);
    detail::Block& blk = blocks_[b];
    const detail::Block& nxt = blocks_[next];
    blk.size += nxt.size;
    blk.next_phys = nxt.next_phys;
    if (nxt.next_phys != detail::kNone)
      blocks_[nxt.next_phys].prev_phys = b;
    else
      top_ = b;
    blocks_.drop(next);
  }

  std::uint32_t grow_for(std::uint64_t size);
  std::size_t trim_top();
  std::size_t trim_holes();
  void map_hole(std::uint64_t offset, std::uint64_t size);
  void* allocate_aligned(std::size_t bytes, std::size_t alignment);
  [[noreturn]] void throw_bad_size(std::size_t bytes) const;
  [[noreturn]] void throw_bad_pointer(const void* p) const;
  [[noreturn]] void throw_oom(std::size_t requested, const std::string& cause);
  std::uint32_t block_containing(std::uint64_t offset) const noexcept;
  std::uint32_t carve(std::uint32_t b, std::uint64_t offset, std::uint64_t size);

  Arena arena_;
  std::uintptr_t base_ = 0;
  detail::BlockStore blocks_;
  detail::FreeLists free_;
  detail::LiveTable live_;
  std::uint32_t top_ = detail::kNone;  // the block that ends at end_
  std::uint64_t end_ =
      0;  // where the top block ends: a whole number of chunks, all mapped but holes
  std::size_t live_count_ = 0;
  std::size_t allocated_ = 0;
  std::optional<Loan> loan_;
  std::uint32_t loan_block_ = detail::kNone;
  // The end of the highest allocation since the last trim(): a loan starts above it, so that room
  // the pool's callers use now and then (a pause buffer in every step) is never lent away.
  std::uint64_t high_water_ = 0;
};

}  // namespace memplan::arena
