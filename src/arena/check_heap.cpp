// The check heap: fresh pages per allocation, frees that wait for their streams, and the errors.
#include "memplan/arena/check_heap.hpp"

#include "bytes.hpp"
#include "core/log.hpp"
#include "memplan/arena/arena.hpp"
#include "memplan/arena/pointer_errors.hpp"
#include "memplan/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace memplan::arena {

using detail::pretty_bytes;

namespace {
void* as_pointer(std::uintptr_t a) { return reinterpret_cast<void*>(a); }
}  // namespace

std::string_view to_string(CheckRegion region) noexcept {
  switch (region) {
    case CheckRegion::Outside:
      return "outside the check heap";
    case CheckRegion::Gap:
      return "a gap between allocations (never mapped)";
    case CheckRegion::Unused:
      return "addresses not handed out yet (never mapped)";
    case CheckRegion::Live:
      return "the pages of a live allocation";
    case CheckRegion::Freed:
      return "the pages of a freed allocation, still mapped and poisoned until its streams pass "
             "the free";
    case CheckRegion::Released:
      return "the pages of a freed allocation, unmapped";
  }
  return "?";
}

CheckHeap::CheckHeap(PhysicalBackend& backend, CheckHeapOptions options)
    : backend_(backend), options_(std::move(options)), granularity_(backend.granularity()) {
  if (options_.reserve_bytes == 0 || options_.reserve_bytes > kMaxReserveBytes) {
    throw InvalidArgument(fmt::format("{}: reserve of {} is outside [1 B, {}]", options_.name,
                                      pretty_bytes(options_.reserve_bytes),
                                      pretty_bytes(kMaxReserveBytes)));
  }
  reserved_ = align_up(options_.reserve_bytes, granularity_);
  try {
    base_ = reinterpret_cast<std::uintptr_t>(backend_.reserve_va(reserved_));
  } catch (const OutOfMemory& e) {
    throw OutOfMemory(fmt::format("{}: cannot reserve {} of address space: {}", options_.name,
                                  pretty_bytes(reserved_), e.what()));
  }
  next_ = base_ + (options_.guard_gaps ? granularity_ : 0);
  used_end_ = base_;
  logger().info("{}: reserved {} at {} ({} backend, pages of {}, guard gaps {})", options_.name,
                pretty_bytes(reserved_), base(), backend_.name(), pretty_bytes(granularity_),
                options_.guard_gaps ? "on" : "off");
}

CheckHeap::~CheckHeap() {
  try {
    drain();
  } catch (const std::exception& e) {
    logger().error("{}: waiting for pending frees at destruction: {}", options_.name, e.what());
  }
  try {
    // Live allocations may still be in use by queued work: wait for every user before unmapping.
    for (const StreamRef user : users_) {
      const FenceHandle fence = take_fence(user);
      spare_fences_.push_back(fence);
      backend_.record_fence(fence, user);
      backend_.wait_fence(fence);
    }
  } catch (const std::exception& e) {
    logger().error("{}: waiting for the user streams at destruction: {}", options_.name, e.what());
  }
  for (Slot& slot : slots_) {
    if (slot.state == State::Released) continue;
    try {
      release(slot);
    } catch (const std::exception& e) {
      logger().error("{}: releasing {} at destruction: {}", options_.name, as_pointer(slot.begin),
                     e.what());
    }
  }
  for (const PendingFree& f : pending_)
    spare_fences_.insert(spare_fences_.end(), f.fences.begin(), f.fences.end());
  for (const FenceHandle fence : spare_fences_) {
    try {
      backend_.destroy_fence(fence);
    } catch (const std::exception& e) {
      logger().error("{}: destroying a fence: {}", options_.name, e.what());
    }
  }
  try {
    backend_.free_va(base(), reserved_);
  } catch (const std::exception& e) {
    logger().error("{}: freeing the address range: {}", options_.name, e.what());
  }
}

void* CheckHeap::allocate(std::size_t bytes, std::size_t alignment, StreamRef stream) {
  if (bytes == 0 || bytes > kMaxReserveBytes) {
    throw InvalidArgument(fmt::format("{}: allocation of {} B is outside [1, {}]", options_.name,
                                      bytes, kMaxReserveBytes));
  }
  if (!std::has_single_bit(alignment) || alignment > kMaxReserveBytes) {
    throw InvalidArgument(fmt::format("{}: alignment {} is not a power of two up to {}",
                                      options_.name, alignment, kMaxReserveBytes));
  }
  collect();
  const std::size_t align = std::max<std::size_t>(alignment, 4);  // fills write whole words
  const std::size_t padded = align_up(bytes, align);
  const std::size_t span = align_up(padded, granularity_);
  const std::uintptr_t begin = align_up(next_, std::max(align, granularity_));
  const std::uintptr_t limit = base_ + reserved_;
  if (begin > limit || span > limit - begin) {
    throw OutOfMemory(fmt::format(
        "{}: address space exhausted: {} B needs {} of fresh addresses but {} of the {} "
        "reserved are left after {} allocations; addresses are never reused, so reserve more "
        "(CompilerOptions::check.reserve_bytes) or check a shorter run",
        options_.name, bytes, pretty_bytes(span), pretty_bytes(next_ < limit ? limit - next_ : 0),
        pretty_bytes(reserved_), slots_.size()));
  }
  add_user(stream);
  slots_.reserve(slots_.size() + 1);  // so that nothing can throw once the pages are mapped
  const ChunkHandle chunk = create_chunk_or_drain(bytes, span);
  void* va = as_pointer(begin);
  bool mapped = false;
  const auto undo = [&]() noexcept {
    try {
      if (mapped) backend_.unmap(va, span);
      backend_.release_chunk(chunk);
    } catch (const std::exception& e) {
      logger().error("{}: undoing a failed allocation: {}", options_.name, e.what());
    }
  };
  try {
    backend_.map(va, span, chunk);
    mapped = true;
    backend_.set_access(va, span);
    if (options_.fill_on_allocate) backend_.fill(va, span, *options_.fill_on_allocate, stream);
  } catch (const OutOfMemory& e) {
    undo();
    throw_oom(bytes, span, e.what());
  } catch (...) {
    undo();
    throw;
  }
  const Slot& slot =
      slots_.emplace_back(Slot{begin, span, begin + span - padded, chunk, State::Live});
  next_ = begin + span + (options_.guard_gaps ? granularity_ : 0);
  used_end_ = begin + span;
  ++live_;
  live_bytes_ += span;
  return as_pointer(slot.user);
}

void CheckHeap::deallocate(void* p, StreamRef stream) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const Slot* found = slot_at(a);
  if (found == nullptr) {
    throw ForeignPointer(fmt::format("{}: deallocate {}: no allocation there (the address is {})",
                                     options_.name, p, to_string(region_of(p))));
  }
  if (a != found->user) {
    throw ForeignPointer(fmt::format(
        "{}: deallocate {}: inside the allocation at {}, {} B from its start, not its start",
        options_.name, p, as_pointer(found->user), static_cast<std::ptrdiff_t>(a - found->user)));
  }
  if (found->state != State::Live) {
    throw DoubleFree(fmt::format("{}: deallocate {}: freed already (now {})", options_.name, p,
                                 to_string(region_of(p))));
  }
  Slot& slot = slots_[static_cast<std::size_t>(found - slots_.data())];
  add_user(stream);
  PendingFree free{static_cast<std::size_t>(&slot - slots_.data()), {}, 0};
  free.fences.reserve(users_.size());
  pending_.emplace_back();  // room first: nothing below may fail after the fences are recorded
  try {
    if (options_.fill_on_free)
      backend_.fill(as_pointer(slot.begin), slot.span, *options_.fill_on_free, stream);
    for (const StreamRef user : users_) {
      free.fences.push_back(take_fence(user));
      backend_.record_fence(free.fences.back(), user);
    }
  } catch (...) {
    pending_.pop_back();
    spare_fences_.insert(spare_fences_.end(), free.fences.begin(), free.fences.end());
    throw;
  }
  pending_.back() = std::move(free);
  slot.state = State::Freed;
  --live_;
  live_bytes_ -= slot.span;
  pending_bytes_ += slot.span;
  collect();
}

void CheckHeap::add_user(StreamRef stream) {
  if (std::find(users_.begin(), users_.end(), stream) == users_.end()) users_.push_back(stream);
}

// Frees are recorded in order on a set of users that only grows, so when the oldest pending free
// has not passed on some stream, no later one has: checking the front is enough.
std::size_t CheckHeap::collect() {
  std::size_t released = 0;
  while (!pending_.empty()) {
    PendingFree& f = pending_.front();
    while (f.passed < f.fences.size() && backend_.fence_passed(f.fences[f.passed])) ++f.passed;
    if (f.passed < f.fences.size()) break;
    release_front();
    ++released;
  }
  return released;
}

void CheckHeap::drain() {
  for (PendingFree& f : pending_) {
    for (; f.passed < f.fences.size(); ++f.passed) backend_.wait_fence(f.fences[f.passed]);
  }
  while (!pending_.empty()) release_front();
}

void CheckHeap::release_front() {
  PendingFree f = std::move(pending_.front());
  pending_.pop_front();
  spare_fences_.insert(spare_fences_.end(), f.fences.begin(), f.fences.end());
  Slot& slot = slots_[f.slot];
  pending_bytes_ -= slot.span;
  release(slot);  // on failure the slot stays Freed and the destructor tries again
  ++released_;
}

void CheckHeap::release(Slot& slot) {
  backend_.unmap(as_pointer(slot.begin), slot.span);
  if (slot.state == State::Live) {
    --live_;
    live_bytes_ -= slot.span;
  }
  slot.state = State::Released;
  backend_.release_chunk(slot.chunk);
}

FenceHandle CheckHeap::take_fence(StreamRef stream) {
  if (spare_fences_.empty()) return backend_.create_fence(stream);
  const FenceHandle fence = spare_fences_.back();
  spare_fences_.pop_back();
  return fence;
}

ChunkHandle CheckHeap::create_chunk_or_drain(std::size_t bytes, std::size_t span) {
  try {
    return backend_.create_chunk(span);
  } catch (const OutOfMemory& e) {
    if (pending_.empty()) throw_oom(bytes, span, e.what());
  }
  // Freed pages wait for their streams: wait for them now rather than fail.
  logger().info("{}: out of memory for {}; waiting for {} pending free(s) ({})", options_.name,
                pretty_bytes(span), pending_.size(), pretty_bytes(pending_bytes_));
  drain();
  try {
    return backend_.create_chunk(span);
  } catch (const OutOfMemory& e) {
    throw_oom(bytes, span, e.what());
  }
}

void CheckHeap::throw_oom(std::size_t bytes, std::size_t span, const char* why) {
  std::string free_text = "unknown";
  try {
    free_text = pretty_bytes(backend_.free_bytes());
  } catch (const std::exception&) {
    // The message is what matters; the free count is best effort.
  }
  throw OutOfMemory(fmt::format(
      "{}: out of memory: requested {} B ({} of pages), {} live allocation(s) hold {}, {} "
      "freed one(s) wait for their streams holding {}, free {} ({} backend): {}",
      options_.name, bytes, pretty_bytes(span), live_, pretty_bytes(live_bytes_), pending_.size(),
      pretty_bytes(pending_bytes_), free_text, backend_.name(), why));
}

const CheckHeap::Slot* CheckHeap::slot_at(std::uintptr_t a) const noexcept {
  const auto after = std::upper_bound(slots_.begin(), slots_.end(), a,
                                      [](std::uintptr_t x, const Slot& s) { return x < s.begin; });
  if (after == slots_.begin()) return nullptr;
  const Slot& s = *(after - 1);
  return a - s.begin < s.span ? &s : nullptr;
}

bool CheckHeap::contains(const void* p) const noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return a >= base_ && a - base_ < reserved_;
}

CheckRegion CheckHeap::region_of(const void* p) const noexcept {
  if (!contains(p)) return CheckRegion::Outside;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (a >= used_end_) return CheckRegion::Unused;
  const Slot* s = slot_at(a);
  if (s == nullptr) return CheckRegion::Gap;
  switch (s->state) {
    case State::Live:
      return CheckRegion::Live;
    case State::Freed:
      return CheckRegion::Freed;
    case State::Released:
      return CheckRegion::Released;
  }
  return CheckRegion::Gap;
}

void* CheckHeap::allocation_at(const void* p) const noexcept {
  const Slot* s = slot_at(reinterpret_cast<std::uintptr_t>(p));
  return s != nullptr ? as_pointer(s->user) : nullptr;
}

CheckHeapStats CheckHeap::stats() const noexcept {
  return CheckHeapStats{.allocations = slots_.size(),
                        .live = live_,
                        .live_bytes = live_bytes_,
                        .pending = pending_.size(),
                        .pending_bytes = pending_bytes_,
                        .released = released_,
                        .address_bytes_used = used_end_ - base_,
                        .reserved_bytes = reserved_};
}

}  // namespace memplan::arena
