// The persistent pool's slow paths: growth of the arena, alignment above 256, trim, errors and
// statistics.
#include "memplan/arena/persistent_pool.hpp"

#include "bytes.hpp"
#include "core/log.hpp"
#include "memplan/arena/pointer_errors.hpp"
#include "memplan/error.hpp"

#include <fmt/format.h>

#include <bit>
#include <vector>

namespace memplan::arena {

using detail::kNone;
using detail::pretty_bytes;

PersistentPool::PersistentPool(PhysicalBackend& backend, PoolOptions options)
    : arena_(backend, options.reserve_bytes,
             ArenaOptions{options.chunk_bytes, std::move(options.name)}),
      base_(reinterpret_cast<std::uintptr_t>(arena_.base())) {}

PersistentPool::~PersistentPool() {
  if (live_count_ != 0)
    logger().warn("{} destroyed with {} allocations ({}) still live", arena_.name(), live_count_,
                  pretty_bytes(allocated_));
}

// Nothing fits: map chunks at the top so that the top block (grown, or new) holds `size`.
std::uint32_t PersistentPool::grow_for(std::uint64_t size) {
  const std::uint64_t mapped = end_;
  const bool top_free = top_ != kNone && blocks_[top_].free();
  const std::uint64_t have = top_free ? blocks_[top_].size : 0;
  const std::uint64_t want = mapped + (size - have);
  if (want > arena_.reserved_bytes())
    throw_oom(size, fmt::format("it needs {} mapped, past the reserved range", pretty_bytes(want)));
  try {
    arena_.ensure_mapped(mapped, want - mapped);  // the holes below stay as they are
  } catch (const OutOfMemory& e) {
    throw_oom(size, e.what());
  }
  end_ = align_up(want, arena_.chunk_bytes());
  const std::uint64_t added = end_ - mapped;
  if (top_free) {
    free_.remove(blocks_, top_);
    blocks_[top_].size += added;
    free_.insert(blocks_, top_);
    return top_;
  }
  const std::uint32_t b = blocks_.make();
  blocks_[b].offset = mapped;
  blocks_[b].size = added;
  blocks_[b].prev_phys = top_;
  if (top_ != kNone) blocks_[top_].next_phys = b;
  top_ = b;
  free_.insert(blocks_, b);
  return b;
}

// Alignment above 256: a block of size + alignment - 256 surely holds an aligned start (offsets
// are multiples of 256). The padding before that start is split off and stays free; it does not
// touch another free block (free blocks are never adjacent), so nothing needs to coalesce.
void* PersistentPool::allocate_aligned(std::size_t bytes, std::size_t alignment) {
  if (!std::has_single_bit(alignment) || alignment > kMaxAlignment) {
    throw InvalidArgument(fmt::format("{}: alignment {} is not a power of two in [1, {}]",
                                      arena_.name(), alignment, kMaxAlignment));
  }
  if (bytes - 1 >= kMaxRequestBytes) throw_bad_size(bytes);
  const std::uint64_t size = align_up(bytes, kAlignment);
  const std::uint64_t search = size + alignment - kAlignment;
  std::uint32_t b = free_.find(blocks_, search);
  if (b == kNone) {
    // Growth keeps the top block's start (or starts a block at the old top): map only what the
    // aligned allocation needs from there, if anything (the top block may fit as it is).
    const bool top_free = top_ != kNone && blocks_[top_].free();
    const std::uint64_t from = base_ + (top_free ? blocks_[top_].offset : end_);
    const std::uint64_t need = align_up(from, alignment) - from + size;
    b = top_free && blocks_[top_].size >= need ? top_ : grow_for(need);
  }
  const std::uint64_t start = base_ + blocks_[b].offset;
  const std::uint64_t pad = align_up(start, alignment) - start;
  if (arena_.mapped_bytes() != end_)
    map_hole(blocks_[b].offset + pad, size);  // before the split: a failure changes nothing
  if (pad == 0) return take(b, size);
  free_.remove(blocks_, b);              // before its size changes: the lists file blocks by size
  split(b, pad, blocks_[b].size - pad);  // the aligned rest becomes a free block of its own
  const std::uint32_t aligned = blocks_[b].next_phys;
  free_.insert(blocks_, b);  // the padding
  return take(aligned, size);
}

void* PersistentPool::allocate_if_free(std::size_t bytes, std::size_t alignment) {
  if (bytes - 1 >= kMaxRequestBytes) throw_bad_size(bytes);
  const std::uint64_t size = align_up(bytes, kAlignment);
  const std::uint64_t search = alignment > kAlignment ? size + alignment - kAlignment : size;
  if (free_.find(blocks_, search) == kNone) return nullptr;
  return allocate(bytes, alignment);
}

// An allocation of [offset, offset + size) while some hole is unmapped: if a chunk of its range
// is, map them (before the block is taken, so a failure changes nothing). Looking is a lookup per
// chunk and allocates nothing, so allocations away from the holes stay off the backend's path.
void PersistentPool::map_hole(std::uint64_t offset, std::uint64_t size) {
  const std::uint64_t chunk = arena_.chunk_bytes();
  bool missing = false;
  for (std::uint64_t at = offset / chunk * chunk; at < offset + size && !missing; at += chunk)
    missing = !arena_.is_mapped(at);
  if (!missing) return;
  try {
    arena_.ensure_mapped(offset, size);
  } catch (const OutOfMemory& e) {
    throw_oom(size, e.what());
  }
}

std::size_t PersistentPool::trim() {
  const std::size_t top = trim_top();
  const std::size_t holes = trim_holes();
  // What was used since is forgotten: a loan may start right past the live bytes again.
  high_water_ = 0;
  for (std::uint32_t b = top_; b != kNone; b = blocks_[b].prev_phys) {
    if (!blocks_[b].free() && b != loan_block_) {
      high_water_ = blocks_[b].offset + blocks_[b].size;
      break;
    }
  }
  return top + holes;
}

std::size_t PersistentPool::trim_top() {
  if (top_ == kNone || !blocks_[top_].free()) return 0;
  const std::size_t before = arena_.mapped_bytes();
  const std::uint64_t mapped = end_;
  const std::size_t keep = align_up(blocks_[top_].offset, arena_.chunk_bytes());
  if (keep >= mapped) return 0;
  arena_.trim(keep);  // first: if it throws, the pool is unchanged
  end_ = keep;
  free_.remove(blocks_, top_);
  if (keep == blocks_[top_].offset) {
    const std::uint32_t prev = blocks_[top_].prev_phys;
    blocks_.drop(top_);
    if (prev != kNone) blocks_[prev].next_phys = kNone;
    top_ = prev;
  } else {
    blocks_[top_].size = keep - blocks_[top_].offset;
    free_.insert(blocks_, top_);
  }
  return before - arena_.mapped_bytes();
}

// Every whole chunk inside a free block below the top goes; the chunks a free block shares with a
// live neighbour stay. One keep_only over the ranges between the holes.
std::size_t PersistentPool::trim_holes() {
  const std::uint64_t chunk = arena_.chunk_bytes();
  std::vector<ByteRange> holes;  // descending, as the walk from the top finds them
  for (std::uint32_t b = top_; b != kNone; b = blocks_[b].prev_phys) {
    if (!blocks_[b].free()) continue;
    const std::uint64_t start = align_up(blocks_[b].offset, chunk);
    const std::uint64_t end = (blocks_[b].offset + blocks_[b].size) / chunk * chunk;
    if (start < end) holes.push_back({start, end - start});
  }
  if (holes.empty()) return 0;
  std::vector<ByteRange> keep;
  std::uint64_t from = 0;
  for (auto h = holes.rbegin(); h != holes.rend(); ++h) {
    if (h->offset > from) keep.push_back({from, h->offset - from});
    from = h->offset + h->bytes;
  }
  if (end_ > from) keep.push_back({from, end_ - from});
  const std::size_t before = arena_.mapped_bytes();
  arena_.keep_only(keep);  // the blocks do not change: a failure leaves the holes mapped
  return before - arena_.mapped_bytes();
}

std::size_t PersistentPool::size_of(const void* p) const {
  const std::uint64_t offset = reinterpret_cast<std::uintptr_t>(p) - base_;
  const std::uint32_t b = offset < arena_.reserved_bytes() ? live_.find(offset) : kNone;
  if (b == kNone) throw_bad_pointer(p);
  return blocks_[b].size;
}

std::optional<std::size_t> PersistentPool::lendable_from() const {
  const std::uint64_t chunk = arena_.chunk_bytes();
  std::uint64_t chunk_offset = 0;
  std::uint64_t used = 0;  // the end of the pool's bytes, from the pool's base
  if (loan_) {
    // The pool's bytes in the loan's chunk end where a free block before the loan starts (if it
    // starts inside the chunk), or at the loan.
    chunk_offset = loan_->chunk_offset;
    const std::uint32_t prev = blocks_[loan_block_].prev_phys;
    used =
        prev == kNone || !blocks_[prev].free() ? chunk_offset + loan_->from : blocks_[prev].offset;
  } else {
    if (top_ == kNone || !blocks_[top_].free()) return std::nullopt;
    used = blocks_[top_].offset;  // the top block reaches end_
    chunk_offset = used / chunk * chunk;
  }
  // Bytes used since the last trim() count as the pool's too. Past a loan's start, the pool
  // grew elsewhere: what it used below the loan is not known, so the loan keeps its start.
  if (high_water_ > used) {
    used = loan_ && high_water_ > chunk_offset + loan_->from ? chunk_offset + loan_->from
                                                             : high_water_;
  }
  if (used <= chunk_offset || used >= chunk_offset + chunk) return std::nullopt;
  return used - chunk_offset;
}

PersistentPool::Loan PersistentPool::lend(std::size_t from) {
  const std::uint64_t chunk = arena_.chunk_bytes();
  const std::optional<std::size_t> lendable = lendable_from();
  if (!lendable || from < *lendable || from >= chunk || from % kAlignment != 0) {
    throw InvalidArgument(fmt::format(
        "{}: cannot lend from offset {} of a chunk of {}: {}", arena_.name(), from,
        pretty_bytes(chunk),
        lendable ? fmt::format("the pool's bytes there end at {} and lent bytes start at a "
                               "multiple of {}",
                               *lendable, kAlignment)
                 : std::string("no chunk is partly the pool's and free to its end")));
  }
  const std::uint64_t chunk_offset =
      loan_ ? loan_->chunk_offset : blocks_[top_].offset / chunk * chunk;
  end_loan();
  loan_block_ = carve(block_containing(chunk_offset + from), chunk_offset + from, chunk - from);
  loan_ = Loan{.chunk = arena_.chunk_at(chunk_offset), .chunk_offset = chunk_offset, .from = from};
  logger().debug("{}: lent [{}, {}) of the chunk at offset {}", arena_.name(), from, chunk,
                 chunk_offset);
  return *loan_;
}

void PersistentPool::end_loan() {
  if (!loan_) return;
  make_free(loan_block_);
  loan_.reset();
  loan_block_ = kNone;
}

// Takes [offset, offset + size) out of the free block `b` that holds it: the bytes before and after
// stay free blocks; the block returned is in no free list and not live.
std::uint32_t PersistentPool::carve(std::uint32_t b, std::uint64_t offset, std::uint64_t size) {
  free_.remove(blocks_, b);
  if (offset > blocks_[b].offset) {
    const std::uint64_t head = offset - blocks_[b].offset;
    split(b, head, blocks_[b].size - head);  // files the rest as free: take it back out
    const std::uint32_t rest = blocks_[b].next_phys;
    free_.remove(blocks_, rest);
    free_.insert(blocks_, b);
    b = rest;
  }
  if (blocks_[b].size > size) split(b, size, blocks_[b].size - size);
  return b;
}

PoolStats PersistentPool::stats() const {
  PoolStats s;
  s.live_allocations = live_count_;
  s.allocated_bytes = allocated_;
  s.mapped_bytes = arena_.mapped_bytes();
  s.extent_bytes = end_;
  s.reserved_bytes = arena_.reserved_bytes();
  s.lent_bytes = loan_ ? arena_.chunk_bytes() - loan_->from : 0;
  s.free_bytes = s.mapped_bytes - allocated_ - s.lent_bytes;
  s.largest_free_block = free_.largest(blocks_);
  s.blocks = blocks_.in_use();
  return s;
}

std::uint32_t PersistentPool::block_containing(std::uint64_t offset) const noexcept {
  for (std::uint32_t b = top_; b != kNone; b = blocks_[b].prev_phys)
    if (blocks_[b].offset <= offset)
      return offset < blocks_[b].offset + blocks_[b].size ? b : kNone;
  return kNone;
}

void PersistentPool::throw_bad_size(std::size_t bytes) const {
  if (bytes == 0) throw InvalidArgument(fmt::format("{}: allocation of zero bytes", arena_.name()));
  throw InvalidArgument(
      fmt::format("{}: absurd allocation size {} (more than {}; a negative size?)", arena_.name(),
                  pretty_bytes(bytes), pretty_bytes(kMaxRequestBytes)));
}

void PersistentPool::throw_bad_pointer(const void* p) const {
  const std::uint64_t offset = reinterpret_cast<std::uintptr_t>(p) - base_;
  if (offset >= arena_.reserved_bytes())
    throw ForeignPointer(fmt::format("{}: pointer {} is not from this pool (it spans {} from {})",
                                     arena_.name(), p, pretty_bytes(arena_.reserved_bytes()),
                                     arena_.base()));
  const std::uint32_t b = block_containing(offset);
  if (b == kNone)
    throw ForeignPointer(
        fmt::format("{}: pointer {} (offset {}) is in the pool's address range but "
                    "outside its mapped memory",
                    arena_.name(), p, offset));
  if (b == loan_block_)
    throw ForeignPointer(fmt::format(
        "{}: pointer {} (offset {}) lies in bytes the pool lent to the planned arena (from "
        "offset {} of the chunk at {}), not in an allocation of the pool",
        arena_.name(), p, offset, loan_->from, loan_->chunk_offset));
  if (blocks_[b].free())
    throw DoubleFree(
        fmt::format("{}: pointer {} (offset {}) lies in free memory: freed twice (or never "
                    "allocated)",
                    arena_.name(), p, offset));
  throw ForeignPointer(
      fmt::format("{}: pointer {} (offset {}) is inside the allocation at offset {} of {}, "
                  "not its start",
                  arena_.name(), p, offset, blocks_[b].offset, pretty_bytes(blocks_[b].size)));
}

void PersistentPool::throw_oom(std::size_t requested, const std::string& cause) {
  throw OutOfMemory(
      fmt::format("{}: out of memory: requested {}, mapped {}, reserved {}, free in pool {} "
                  "(largest block {}): {}",
                  arena_.name(), pretty_bytes(requested), pretty_bytes(arena_.mapped_bytes()),
                  pretty_bytes(arena_.reserved_bytes()),
                  pretty_bytes(arena_.mapped_bytes() - allocated_ -
                               (loan_ ? arena_.chunk_bytes() - loan_->from : 0)),
                  pretty_bytes(free_.largest(blocks_)), cause));
}

}  // namespace memplan::arena
