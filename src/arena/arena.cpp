// The arena's slow paths: reserve, growth with rollback, trim, and the error messages.
#include "memplan/arena/arena.hpp"

#include "bytes.hpp"
#include "memplan/error.hpp"
#include "memplan/log.hpp"

#include <fmt/format.h>

namespace memplan::arena {

using detail::pretty_bytes;
using detail::round_up;

Arena::Arena(PhysicalBackend& backend, ArenaOptions options)
    : backend_(backend), options_(std::move(options)), users_(backend) {
  if (options_.chunk_bytes == 0)
    throw InvalidArgument(fmt::format("arena '{}': chunk size of zero bytes", options_.name));
  if (options_.chunk_bytes > kMaxReserveBytes)
    throw InvalidArgument(fmt::format("arena '{}': absurd chunk size {}", options_.name,
                                      pretty_bytes(options_.chunk_bytes)));
  chunk_ = round_up(options_.chunk_bytes, backend_.granularity());
}

Arena::Arena(PhysicalBackend& backend, std::size_t reserve_bytes, ArenaOptions options)
    : Arena(backend, std::move(options)) {
  reserve(reserve_bytes);
}

Arena::~Arena() {
  if (base_ == nullptr) return;
  try {
    if (!chunks_.empty()) unmap_from(0);
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
  if (bytes == 0) throw InvalidArgument(fmt::format("arena '{}': reserve of zero bytes", options_.name));
  if (bytes > kMaxReserveBytes)
    throw InvalidArgument(fmt::format("arena '{}': absurd reserve of {} (more than {})", options_.name,
                                      pretty_bytes(bytes), pretty_bytes(kMaxReserveBytes)));
  const std::size_t rounded = round_up(bytes, chunk_);
  try {
    base_ = backend_.reserve_va(rounded);
  } catch (const OutOfMemory& e) {
    throw OutOfMemory(fmt::format("arena '{}': cannot reserve {} of address space: {}", options_.name,
                                  pretty_bytes(rounded), e.what()));
  }
  reserved_ = rounded;
  chunks_.reserve(reserved_ / chunk_ < 4096 ? reserved_ / chunk_ : 4096);
  logger().debug("arena '{}': reserved {} at {} ({} backend, chunks of {})", options_.name,
                 pretty_bytes(reserved_), base_, backend_.name(), pretty_bytes(chunk_));
}

void Arena::grow(std::size_t bytes) {
  if (base_ == nullptr)
    throw InvalidState(fmt::format("arena '{}': ensure_mapped({}) before reserve()", options_.name, bytes));
  if (bytes > kMaxReserveBytes)
    throw InvalidArgument(fmt::format("arena '{}': absurd size {} to map", options_.name, pretty_bytes(bytes)));
  if (bytes > reserved_) throw_oom(bytes, "the request exceeds the reserved address range");

  const std::size_t first = chunks_.size();
  const std::size_t target = round_up(bytes, chunk_) / chunk_;
  try {
    chunks_.reserve(target);
    for (std::size_t i = first; i < target; ++i) {
      const ChunkHandle chunk = backend_.create_chunk(chunk_);
      try {
        backend_.map(address(i * chunk_), chunk_, chunk);
      } catch (...) {
        backend_.release_chunk(chunk);
        throw;
      }
      chunks_.push_back(chunk);
    }
    // One call for the whole new range: per-chunk cuMemSetAccess costs ~28 us each on an H200.
    backend_.set_access(address(first * chunk_), (target - first) * chunk_);
  } catch (const OutOfMemory& e) {
    rollback_to(first);
    throw_oom(bytes, e.what());
  } catch (...) {
    rollback_to(first);
    throw;
  }
  mapped_ = target * chunk_;
  logger().debug("arena '{}': mapped {} chunks more, {} now", options_.name, target - first,
                 pretty_bytes(mapped_));
}

void Arena::trim(std::size_t keep_bytes) {
  const std::size_t keep = round_up(keep_bytes < mapped_ ? keep_bytes : mapped_, chunk_) / chunk_;
  if (keep >= chunks_.size()) return;
  unmap_from(keep);
  logger().debug("arena '{}': trimmed to {}", options_.name, pretty_bytes(mapped_));
}

// Waits for the users, unmaps chunks [first, end) in one call and releases their handles.
void Arena::unmap_from(std::size_t first) {
  users_.wait_all();
  backend_.unmap(address(first * chunk_), (chunks_.size() - first) * chunk_);
  // From here the range is unmapped whatever happens: forget the chunks even if a release fails.
  const std::vector<ChunkHandle> gone(chunks_.begin() + static_cast<std::ptrdiff_t>(first), chunks_.end());
  chunks_.resize(first);
  mapped_ = first * chunk_;
  std::string failures;
  for (const ChunkHandle chunk : gone) {
    try {
      backend_.release_chunk(chunk);
    } catch (const std::exception& e) {
      failures += failures.empty() ? e.what() : std::string("; ") + e.what();
    }
  }
  if (!failures.empty())
    throw Error(fmt::format("arena '{}': unmapped, but releasing chunks failed: {}", options_.name, failures));
}

// Undoes a failed grow: nothing used these chunks yet, so no fence is needed.
void Arena::rollback_to(std::size_t chunks) noexcept {
  if (chunks_.size() <= chunks) return;
  try {
    backend_.unmap(address(chunks * chunk_), (chunks_.size() - chunks) * chunk_);
    for (std::size_t i = chunks; i < chunks_.size(); ++i) backend_.release_chunk(chunks_[i]);
  } catch (const std::exception& e) {
    logger().error("arena '{}': rolling back a failed growth: {}", options_.name, e.what());
  }
  chunks_.resize(chunks);
}

void Arena::throw_oom(std::size_t requested, const char* why) {
  std::string free_text = "unknown";
  try {
    free_text = pretty_bytes(backend_.free_bytes());
  } catch (const std::exception&) {
    // The message is what matters; the free count is best effort.
  }
  throw OutOfMemory(fmt::format(
      "arena '{}': out of memory: requested {}, mapped {}, reserved {}, free {} ({} backend, chunks of {}): {}",
      options_.name, pretty_bytes(requested), pretty_bytes(mapped_), pretty_bytes(reserved_), free_text,
      backend_.name(), pretty_bytes(chunk_), why));
}

}  // namespace memplan::arena
