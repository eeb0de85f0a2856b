// The planned allocation path of Compiler::allocate (the lock is held), in a header so that the
// public call keeps it inline on its fast path while check mode's poison-only path calls it too.
#pragma once

#include "compiler_impl.hpp"

namespace memplan {

[[gnu::always_inline]] inline void* Compiler::allocate_planned(std::size_t bytes, StreamRef stream,
                                                               std::string_view tag,
                                                               std::size_t alignment) {
  if (stream == impl_->last_stream) [[likely]] {
    if (void* p = impl_->try_replay_allocate(bytes, tag, alignment)) [[likely]]
      return p;
  } else {
    use_stream(stream);
  }
  impl_->last_stream = stream;
  try {
    return impl_->allocate(bytes, tag, alignment);
  } catch (const OutOfMemory& e) {
    impl_->rethrow_allocate_failure(bytes, e);
  }
}

}  // namespace memplan
