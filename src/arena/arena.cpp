// The arena's slow paths: reserve, growth with rollback, trim, and the error messages.
#include "memplan/arena/arena.hpp"

#include "bytes.hpp"
#include "core/log.hpp"
#include "memplan/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace memplan::arena {

using detail::pretty_bytes;

namespace {

// Whether the slot [start, start + bytes) shares a byte with one of `ranges`.
bool touches(std::span<const ByteRange> ranges, std::size_t start, std::size_t bytes) {
  return std::any_of(ranges.begin(), ranges.end(), [&](const ByteRange& r) {
    return r.bytes > 0 && start < r.offset + r.bytes && r.offset < start + bytes;
  });
}

}  // namespace

Arena::Arena(PhysicalBackend& backend, ArenaOptions options)
    : backend_(backend), options_(std::move(options)), users_(backend) {
  if (options_.chunk_bytes == 0)
    throw InvalidArgument(fmt::format("arena '{}': chunk size of zero bytes", options_.name));
  if (options_.chunk_bytes > kMaxReserveBytes)
    throw InvalidArgument(fmt::format("arena '{}': absurd chunk size {}", options_.name,
                                      pretty_bytes(options_.chunk_bytes)));
  chunk_ = align_up(options_.chunk_bytes, backend_.granularity());
}

Arena::Arena(PhysicalBackend& backend, std::size_t reserve_bytes, ArenaOptions options)
    : Arena(backend, std::move(options)) {
  reserve(reserve_bytes);
}

Arena::~Arena() {
  if (base_ == nullptr) return;
  try {
    release();
  } catch (const std::exception& e) {
    logger().error("arena '{}': unmapping at destruction: {}", options_.name, e.what());
  }
  try {
    backend_.free_va(base_, reserved_);
  } catch (const std::exception& e) {
    logger().error("arena '{}': freeing the address range: {}", options_.name, e.what());
  }
}

void Arena::reserve(std::size_t bytes) {
  if (base_ != nullptr)
    throw InvalidState(fmt::format("arena '{}': reserve() is once; {} are already reserved",
                                   options_.name, pretty_bytes(reserved_)));
  if (bytes == 0)
    throw InvalidArgument(fmt::format("arena '{}': reserve of zero bytes", options_.name));
  if (bytes > kMaxReserveBytes)
    throw InvalidArgument(fmt::format("arena '{}': absurd reserve of {} (more than {})",
                                      options_.name, pretty_bytes(bytes),
                                      pretty_bytes(kMaxReserveBytes)));
  const std::size_t rounded = align_up(bytes, chunk_);
  try {
    base_ = backend_.reserve_va(rounded);
  } catch (const OutOfMemory& e) {
    throw OutOfMemory(fmt::format("arena '{}': cannot reserve {} of address space: {}",
                                  options_.name, pretty_bytes(rounded), e.what()));
  }
  reserved_ = rounded;
  logger().debug("arena '{}': reserved {} at {} ({} backend, chunks of {})", options_.name,
                 pretty_bytes(reserved_), base_, backend_.name(), pretty_bytes(chunk_));
}

void Arena::map_slots(std::span<const ByteRange> ranges, bool reuse_others) {
  if (base_ == nullptr)
    throw InvalidState(fmt::format("arena '{}': mapping before reserve()", options_.name));
  std::vector<std::size_t> wanted;  // slots of `ranges` not mapped yet, in address order
  std::size_t top = 0;              // the end of the furthest range, for messages
  for (const ByteRange& r : ranges) {
    if (r.bytes > kMaxReserveBytes || r.offset > kMaxReserveBytes)
      throw InvalidArgument(fmt::format("arena '{}': absurd range of {} at offset {} to map",
                                        options_.name, pretty_bytes(r.bytes), r.offset));
    top = std::max(top, r.offset + r.bytes);
    if (r.offset + r.bytes > reserved_)
      throw_oom(r.offset + r.bytes, "the request exceeds the reserved address range");
    if (r.bytes == 0) continue;
    for (std::size_t i = r.offset / chunk_; i < align_up(r.offset + r.bytes, chunk_) / chunk_;
         ++i) {
      if (!slots_.contains(i)) wanted.push_back(i);
    }
  }
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  if (wanted.empty()) {
    if (ranges.size() == 1) covered_ = ranges.front();
    return;
  }

  // Donors: mapped slots that no range touches (remap unmaps them right after). A borrowed chunk
  // is never one: the rest of it is its owner's.
  std::vector<ChunkHandle> donors;
  if (reuse_others) {
    for (const auto& [slot, chunk] : slots_) {
      const std::size_t start = slot * chunk_;
      if (!touches(ranges, start, chunk_) && !borrowed_.contains(slot)) donors.push_back(chunk);
    }
    std::reverse(donors.begin(), donors.end());  // taken from the back: lowest slots first
  }

  std::vector<std::size_t> mapped_now;
  try {
    for (const std::size_t slot : wanted) {
      const auto lent = borrowed_.find(slot);
      if (lent != borrowed_.end()) {
        backend_.map(address(slot * chunk_), chunk_, lent->second);
        slots_.emplace(slot, lent->second);
        mapped_now.push_back(slot);
        continue;
      }
      const bool reused = !donors.empty();
      const ChunkHandle chunk = reused ? donors.back() : backend_.create_chunk(chunk_);
      try {
        backend_.map(address(slot * chunk_), chunk_, chunk);
      } catch (...) {
        if (!reused) backend_.release_chunk(chunk);
        throw;
      }
      if (reused) donors.pop_back();
      slots_.emplace(slot, chunk);
      ++mappings_[chunk];
      mapped_now.push_back(slot);
    }
    // One call per run of new slots: per-chunk cuMemSetAccess costs ~28 us each on an H200.
    for (std::size_t k = 0; k < mapped_now.size();) {
      std::size_t end = k + 1;
      while (end < mapped_now.size() && mapped_now[end] == mapped_now[end - 1] + 1) ++end;
      backend_.set_access(address(mapped_now[k] * chunk_), (end - k) * chunk_);
      k = end;
    }
  } catch (const OutOfMemory& e) {
    rollback(mapped_now);
    throw_oom(top, e.what());
  } catch (...) {
    rollback(mapped_now);
    throw;
  }
  count_mapped();
  if (ranges.size() == 1) covered_ = ranges.front();
  logger().debug("arena '{}': mapped {} chunks more, {} now", options_.name, mapped_now.size(),
                 pretty_bytes(mapped_));
}

bool Arena::mapped_throughout(std::size_t offset, std::size_t bytes) const noexcept {
  if (bytes == 0) return true;
  if (offset >= covered_.offset && bytes <= covered_.bytes &&
      offset - covered_.offset <= covered_.bytes - bytes) {
    return true;
  }
  const std::size_t last = (offset + bytes - 1) / chunk_;
  auto it = slots_.find(offset / chunk_);
  for (std::size_t slot = offset / chunk_; slot <= last; ++slot, ++it) {
    if (it == slots_.end() || it->first != slot) return false;
  }
  return true;
}

void Arena::keep_only(std::span<const ByteRange> keep) {
  std::vector<std::size_t> gone;
  for (const auto& [slot, chunk] : slots_) {
    const std::size_t start = slot * chunk_;
    if (!touches(keep, start, chunk_)) gone.push_back(slot);
  }
  if (gone.empty()) return;
  users_.wait_all();
  unmap_slots(gone);
  logger().debug("arena '{}': unmapped {} chunks, {} now", options_.name, gone.size(),
                 pretty_bytes(mapped_));
}

// Unmaps `slots` (ascending), one call per run of adjacent slots, and releases each chunk that no
// other slot maps. From the unmap on, a slot is forgotten whatever happens; failures are reported
// together at the end.
void Arena::unmap_slots(const std::vector<std::size_t>& slots) {
  covered_ = {};
  std::string failures;
  const auto note = [&](const std::exception& e) {
    failures += failures.empty() ? e.what() : std::string("; ") + e.what();
  };
  for (std::size_t k = 0; k < slots.size();) {
    std::size_t end = k + 1;
    while (end < slots.size() && slots[end] == slots[end - 1] + 1) ++end;
    try {
      backend_.unmap(address(slots[k] * chunk_), (end - k) * chunk_);
    } catch (const std::exception& e) {
      note(e);
    }
    for (; k < end; ++k) {
      const auto it = slots_.find(slots[k]);
      const ChunkHandle chunk = it->second;
      slots_.erase(it);
      if (borrowed_.contains(slots[k]) || --mappings_[chunk] > 0) continue;
      mappings_.erase(chunk);
      try {
        backend_.release_chunk(chunk);
      } catch (const std::exception& e) {
        note(e);
      }
    }
  }
  count_mapped();
  if (!failures.empty())
    throw Error(fmt::format("arena '{}': unmapping failed: {}", options_.name, failures));
}

void Arena::count_mapped() noexcept {
  std::size_t borrowed_mapped = 0;
  for (const auto& [slot, chunk] : borrowed_) borrowed_mapped += slots_.contains(slot) ? 1 : 0;
  mapped_ = (slots_.size() - borrowed_mapped) * chunk_;
}

ChunkHandle Arena::chunk_at(std::size_t offset) const {
  const auto it = slots_.find(offset / chunk_);
  if (it == slots_.end())
    throw InvalidArgument(
        fmt::format("arena '{}': no chunk is mapped at offset {}", options_.name, offset));
  return it->second;
}

void Arena::borrow(std::size_t offset, ChunkHandle chunk) {
  if (base_ == nullptr)
    throw InvalidState(fmt::format("arena '{}': borrowing before reserve()", options_.name));
  if (offset >= reserved_)
    throw InvalidArgument(fmt::format("arena '{}': borrowing at offset {}, past the {} reserved",
                                      options_.name, offset, pretty_bytes(reserved_)));
  const std::size_t slot = offset / chunk_;
  if (borrowed_.contains(slot))
    throw InvalidState(fmt::format("arena '{}': the slot at offset {} borrows a chunk already",
                                   options_.name, slot * chunk_));
  const bool was_mapped = slots_.contains(slot);
  if (was_mapped) {
    users_.wait_all();
    unmap_slots({slot});
  }
  borrowed_.emplace(slot, chunk);
  if (!was_mapped) return;
  const ByteRange range{slot * chunk_, chunk_};
  try {
    map_slots({&range, 1}, /*reuse_others=*/false);
  } catch (...) {
    borrowed_.erase(slot);  // the slot stays unmapped: the next growth maps a chunk of its own
    throw;
  }
}

void Arena::end_borrow(std::size_t offset) {
  const std::size_t slot = offset / chunk_;
  if (!borrowed_.contains(slot)) return;
  if (slots_.contains(slot)) {
    users_.wait_all();
    try {
      unmap_slots({slot});
    } catch (...) {
      borrowed_.erase(slot);  // unmap_slots forgot the slot whatever happened
      throw;
    }
  }
  borrowed_.erase(slot);
}

// Undoes a failed map_slots: nothing used these slots yet, so no fence is needed.
void Arena::rollback(const std::vector<std::size_t>& slots) noexcept {
  try {
    unmap_slots(slots);
  } catch (const std::exception& e) {
    logger().error("arena '{}': rolling back a failed growth: {}", options_.name, e.what());
  }
}

void Arena::throw_oom(std::size_t requested, const char* why) {
  std::string free_text = "unknown";
  try {
    free_text = pretty_bytes(backend_.free_bytes());
  } catch (const std::exception&) {
    // The message is what matters; the free count is best effort.
  }
  throw OutOfMemory(
      fmt::format("arena '{}': out of memory: requested {}, mapped {}, reserved {}, free {} ({} "
                  "backend, chunks of {}): {}",
                  options_.name, pretty_bytes(requested), pretty_bytes(mapped_),
                  pretty_bytes(reserved_), free_text, backend_.name(), pretty_bytes(chunk_), why));
}

}  // namespace memplan::arena
