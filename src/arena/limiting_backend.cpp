#include "memplan/arena/limiting_backend.hpp"

#include "bytes.hpp"
#include "memplan/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace memplan::arena {

std::size_t LimitingBackend::used_bytes() const {
  std::lock_guard lock(mutex_);
  return used_;
}

ChunkHandle LimitingBackend::do_create_chunk(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  if (bytes > limit_ - std::min(used_, limit_)) {
    throw OutOfMemory(fmt::format("limit of {} reached: {} in use, {} more asked",
                                  detail::pretty_bytes(limit_), detail::pretty_bytes(used_),
                                  detail::pretty_bytes(bytes)));
  }
  const ChunkHandle chunk = upstream_.create_chunk(bytes);
  sizes_.emplace(chunk, bytes);
  used_ += bytes;
  return chunk;
}

void LimitingBackend::do_release_chunk(ChunkHandle chunk) {
  upstream_.release_chunk(chunk);
  std::lock_guard lock(mutex_);
  if (const auto it = sizes_.find(chunk); it != sizes_.end()) {
    used_ -= it->second;
    sizes_.erase(it);
  }
}

std::size_t LimitingBackend::do_free_bytes() {
  const std::size_t upstream_free = upstream_.free_bytes();
  std::lock_guard lock(mutex_);
  return std::min(upstream_free, limit_ - std::min(used_, limit_));
}

}  // namespace memplan::arena
