// The streams that use a piece of memory, and the fence that proves they are done with it.
// Each registered stream gets one backend fence (a CUevent) made at registration; wait_all()
// records every fence, then waits on each: the host blocks only for those streams, never for the
// whole device, and only when memory is about to be unmapped.
#pragma once

#include "memplan/arena/backend.hpp"

#include <vector>

namespace memplan::arena {

class StreamUsers {
 public:
  explicit StreamUsers(PhysicalBackend& backend) : backend_(backend) {}
  StreamUsers(const StreamUsers&) = delete;
  StreamUsers& operator=(const StreamUsers&) = delete;
  ~StreamUsers();

  // Registers `stream`; adding one already registered does nothing.
  void add(StreamRef stream);
  // Waits for the work queued on `stream`, then forgets it. Call before destroying the stream.
  // Throws InvalidArgument when `stream` is not registered.
  void remove(StreamRef stream);
  // Blocks until the work queued so far on every registered stream is complete.
  void wait_all();

  bool contains(StreamRef stream) const noexcept;
  std::size_t size() const noexcept { return users_.size(); }

 private:
  struct User {
    StreamRef stream;
    FenceHandle fence;
  };
  PhysicalBackend& backend_;
  std::vector<User> users_;
};

}  // namespace memplan::arena
