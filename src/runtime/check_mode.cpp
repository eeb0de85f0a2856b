// Check mode: serving, poisoning and recording buffers, and naming the buffer behind an address.
#include "check_mode.hpp"

#include <fmt/format.h>

#include <bit>
#include <mutex>
#include <thread>

#include "compiler_impl.hpp"
#include "memplan/arena/pointer_errors.hpp"
#include "planned_allocate.hpp"

namespace memplan {
namespace {

std::uintptr_t address_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

const char* on_off(bool flag) { return flag ? "on" : "off"; }

}  // namespace

std::string_view to_string(AddressKind kind) noexcept {
  switch (kind) {
    case AddressKind::Buffer:
      return "buffer";
    case AddressKind::Padding:
      return "padding";
    case AddressKind::Gap:
      return "gap";
    case AddressKind::Unused:
      return "unused";
    case AddressKind::NotOwned:
      return "not owned";
  }
  return "?";
}

Compiler::Check::Check(arena::PhysicalBackend& backend, const CompilerOptions& options)
    : backend_(backend), options_(options.check), default_alignment_(options.default_alignment) {
  if (options_.fresh_addresses()) {
    heap_.emplace(
        backend,
        arena::CheckHeapOptions{
            .reserve_bytes = options_.reserve_bytes,
            .guard_gaps = options_.guard_gaps,
            .fill_on_allocate = options_.poison ? std::optional(kPoisonAllocated) : std::nullopt,
            .fill_on_free = options_.poison ? std::optional(kPoisonFreed) : std::nullopt,
            .name = "check heap"});
  }
}

void* Compiler::Check::allocate(Compiler& compiler, std::size_t bytes, StreamRef stream,
                                std::string_view tag, std::size_t alignment) {
  Impl& impl = *compiler.impl_;
  const std::lock_guard guard(impl.lock);
  void* p = nullptr;
  if (heap_) {
    if (alignment != 0 && !std::has_single_bit(alignment)) {
      throw InvalidArgument(fmt::format("allocate: alignment {} is not a power of two", alignment));
    }
    p = heap_->allocate(bytes, std::max(alignment, default_alignment_), stream);
  } else {
    p = compiler.allocate_planned(bytes, stream, tag, alignment);
    if (options_.poison)
      poison(p, bytes, std::max(alignment, default_alignment_), kPoisonAllocated, stream);
  }
  book_.add(BufferRecord{
      .address = p, .bytes = bytes, .tag = std::string(tag), .allocated = moment(impl)});
  return p;
}

void Compiler::Check::deallocate(Compiler& compiler, void* p, StreamRef stream) {
  if (p == nullptr) return;
  Impl& impl = *compiler.impl_;
  const std::lock_guard guard(impl.lock);
  try {
    if (heap_) {
      heap_->deallocate(p, stream);
    } else {
      if (options_.poison) compiler.use_stream(stream);  // unmapping must wait for the poison
      if (!impl.try_replay_free(p)) impl.deallocate(p);
    }
  } catch (const arena::DoubleFree& e) {
    throw arena::DoubleFree(fmt::format("{}; check mode: {}", e.what(), history(p)));
  } catch (const arena::ForeignPointer& e) {
    throw arena::ForeignPointer(fmt::format("{}; check mode: {}", e.what(), history(p)));
  }
  BufferRecord* record = book_.alive_at(p);
  if (record == nullptr) return;  // not recorded: cannot happen while every allocation is
  if (!heap_ && options_.poison) poison(p, record->bytes, default_alignment_, kPoisonFreed, stream);
  book_.mark_freed(*record, moment(impl));
}

// Planned buffers start at multiples of their alignment, so with an alignment of 4 or more the
// words up to the next multiple of 4 are this buffer's padding; below that only whole words inside
// are filled.
void Compiler::Check::poison(void* p, std::size_t bytes, std::size_t alignment,
                             std::uint32_t pattern, StreamRef stream) {
  std::uintptr_t begin = address_of(p);
  std::uintptr_t end = begin + bytes;
  if (alignment >= 4) {
    end = (end + 3) & ~std::uintptr_t{3};
  } else {
    begin = (begin + 3) & ~std::uintptr_t{3};
    end &= ~std::uintptr_t{3};
  }
  if (end > begin) backend_.fill(reinterpret_cast<void*>(begin), end - begin, pattern, stream);
}

CheckMoment Compiler::Check::moment(const Impl& impl) {
  CheckMoment m{.step = impl.cursor.serial(), .paused = impl.pause_depth > 0};
  if (!impl.cursor.running()) return m;
  m.step_name = impl.cursor.step().name;
  m.scope = impl.scope_path();
  m.other_thread = !impl.cursor.on_step_thread();
  if (!m.paused && !m.other_thread) {
    if (counted_step_ != impl.cursor.serial()) {
      counted_step_ = impl.cursor.serial();
      next_event_ = 0;
    }
    m.event = next_event_++;
  }
  return m;
}

std::string Compiler::Check::history(const void* p) const {
  if (const BufferRecord* record = book_.at(p)) return memplan::describe(*record);
  const AddressBook::Around around = book_.around(p);
  if (around.holding != nullptr) {
    return fmt::format("{} B into {}", address_of(p) - address_of(around.holding->address),
                       memplan::describe(*around.holding));
  }
  return "no buffer was recorded at this address";
}

void Compiler::Check::trim() {
  if (heap_) heap_->drain();
}

std::string Compiler::Check::summary() const {
  std::string out = fmt::format(
      "check mode: poison {}, no reuse {}, guard gaps {}; {} buffer(s) recorded, {} alive\n",
      on_off(options_.poison), on_off(options_.no_reuse), on_off(options_.guard_gaps), book_.size(),
      book_.alive());
  if (heap_) {
    const arena::CheckHeapStats s = heap_->stats();
    out += fmt::format(
        "check heap: {} allocation(s), {} live ({} B of pages), {} freed waiting for their streams "
        "({} B), "
        "{} released; {} of {} B of address space used (never reused)\n",
        s.allocations, s.live, s.live_bytes, s.pending, s.pending_bytes, s.released,
        s.address_bytes_used, s.reserved_bytes);
  }
  return out;
}

AddressReport Compiler::Check::describe(const Impl& impl, const Check* check, const void* p) {
  AddressReport r{.address = p};
  const arena::Arena& pool_arena = impl.pool.arena();
  const arena::CheckHeap* heap = check != nullptr && check->heap_ ? &*check->heap_ : nullptr;
  std::optional<arena::CheckRegion> heap_region;
  const arena::Arena* region_arena = nullptr;  // the arena holding p, when it is not the heap
  if (heap != nullptr && heap->contains(p)) {
    r.region = "check heap";
    heap_region = heap->region_of(p);
    r.mapped =
        *heap_region == arena::CheckRegion::Live || *heap_region == arena::CheckRegion::Freed;
  } else if (impl.arena.raw().contains(p) || pool_arena.contains(p)) {
    region_arena = impl.arena.raw().contains(p) ? &impl.arena.raw() : &pool_arena;
    r.region = region_arena == &impl.arena.raw() ? "planned arena" : "persistent pool";
    // Any chunk may be mapped (the window moves, trim_to leaves holes), not only a run from 0.
    r.mapped = region_arena->is_mapped(address_of(p) - address_of(region_arena->base()));
  } else {
    r.text = fmt::format(
        "{}: not memplan's: outside the planned arena ({} + {} B) and the persistent pool ({} + {} "
        "B)",
        p, impl.arena.raw().base(), impl.arena.raw().reserved_bytes(), pool_arena.base(),
        pool_arena.reserved_bytes());
    if (heap != nullptr) {
      r.text += fmt::format(" and the check heap ({} + {} B)", heap->base(),
                            heap->stats().reserved_bytes);
    }
    return r;
  }
  const std::string where = heap_region
                                ? fmt::format("in the check heap: {}", to_string(*heap_region))
                                : fmt::format("in the {} at offset {} ({})", r.region,
                                              address_of(p) - address_of(region_arena->base()),
                                              r.mapped ? "mapped" : "not mapped");
  if (check == nullptr) {
    r.kind = AddressKind::Unused;
    r.text = fmt::format(
        "{}: {}; check mode is off, so no buffer was recorded (CompilerOptions::check)", p, where);
    return r;
  }

  const AddressBook::Around around = check->book_.around(p);
  const auto same_region = [&](const BufferRecord* b) {
    return b != nullptr &&
           (heap_region ? heap->contains(b->address) : region_arena->contains(b->address));
  };
  if (around.holding != nullptr) {
    r.kind = AddressKind::Buffer;
    r.buffer = *around.holding;
  } else if (void* owner = heap != nullptr ? heap->allocation_at(p) : nullptr) {
    // In an allocation's pages but not its bytes.
    r.kind = AddressKind::Padding;
    if (const BufferRecord* record = check->book_.at(owner)) r.buffer = *record;
  } else {
    r.kind = heap_region == arena::CheckRegion::Unused ? AddressKind::Unused : AddressKind::Gap;
    const BufferRecord* below = same_region(around.below) ? around.below : nullptr;
    const BufferRecord* above = same_region(around.above) ? around.above : nullptr;
    const BufferRecord* nearest = below;
    if (above != nullptr &&
        (below == nullptr || address_of(above->address) - address_of(p) <
                                 address_of(p) - (address_of(below->address) + below->bytes))) {
      nearest = above;
    }
    if (nearest != nullptr) r.buffer = *nearest;
  }

  if (!r.buffer) {
    r.text = fmt::format("{}: {}; no buffer recorded near it", p, where);
    return r;
  }
  const BufferRecord& b = *r.buffer;
  r.offset = static_cast<std::ptrdiff_t>(address_of(p) - address_of(b.address));
  std::string relation;
  if (r.kind == AddressKind::Buffer) {
    relation = fmt::format("byte {} of", r.offset);
  } else if (r.offset < 0) {
    relation = fmt::format("{} B before the start of", -r.offset);
  } else if (const std::size_t past = static_cast<std::size_t>(r.offset) - b.bytes; past == 0) {
    relation = "just past the end of";
  } else {
    relation = fmt::format("{} B past the end of", past);
  }
  const char* what = r.kind == AddressKind::Padding  ? "padding, "
                     : r.kind == AddressKind::Buffer ? ""
                                                     : "nearest: ";
  r.text = fmt::format("{}: {}{} {}; {}", p, what, relation, memplan::describe(b), where);
  return r;
}

AddressReport Compiler::describe_address(const void* p) const {
  const std::lock_guard guard(impl_->lock);
  return Check::describe(*impl_, check_.get(), p);
}

}  // namespace memplan
