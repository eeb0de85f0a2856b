#include "memplan/arena/stream_users.hpp"

#include "core/log.hpp"
#include "memplan/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace memplan::arena {

StreamUsers::~StreamUsers() {
  for (const User& u : users_) {
    try {
      backend_.destroy_fence(u.fence);
    } catch (const std::exception& e) {
      logger().error("stream users: destroying the fence of stream {}: {}", u.stream.native,
                     e.what());
    }
  }
}

void StreamUsers::add(StreamRef stream) {
  if (contains(stream)) return;
  users_.reserve(users_.size() + 1);  // so the push below cannot throw after the fence exists
  users_.push_back(User{stream, backend_.create_fence(stream)});
}

void StreamUsers::remove(StreamRef stream) {
  const auto it =
      std::find_if(users_.begin(), users_.end(), [&](const User& u) { return u.stream == stream; });
  if (it == users_.end())
    throw InvalidArgument(fmt::format("stream {} is not a registered user", stream.native));
  backend_.record_fence(it->fence, it->stream);
  backend_.wait_fence(it->fence);
  backend_.destroy_fence(it->fence);
  users_.erase(it);
}

void StreamUsers::wait_all() {
  // Record all first, then wait: the streams drain in parallel.
  for (const User& u : users_) backend_.record_fence(u.fence, u.stream);
  for (const User& u : users_) backend_.wait_fence(u.fence);
}

bool StreamUsers::contains(StreamRef stream) const noexcept {
  return std::any_of(users_.begin(), users_.end(),
                     [&](const User& u) { return u.stream == stream; });
}

}  // namespace memplan::arena
