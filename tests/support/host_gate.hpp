// A gate in a host stream's queue: the stream stops there until the gate opens, as a kernel
// that is still running when the host goes on. The waiting task shares the gate's state, so the
// gate may go before the stream; it opens when destroyed.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>

#include "memplan/arena/host_stream.hpp"

namespace memplan::testing {

class Gate {
 public:
  explicit Gate(arena::HostStream& stream) : state_(std::make_shared<State>()) {
    stream.enqueue([state = state_] {
      std::unique_lock lock(state->mutex);
      state->changed.wait(lock, [&] { return state->open; });
    });
  }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  ~Gate() { open(); }
  void open() {
    {
      std::lock_guard lock(state_->mutex);
      state_->open = true;
    }
    state_->changed.notify_all();
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    bool open = false;
  };
  std::shared_ptr<State> state_;
};

}  // namespace memplan::testing
