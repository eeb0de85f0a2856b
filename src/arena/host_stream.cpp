#include "memplan/arena/host_stream.hpp"

namespace memplan::arena {

HostStream::HostStream() : worker_([this] { run(); }) {}

HostStream::~HostStream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_one();
  worker_.join();
}

void HostStream::enqueue(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
    ++enqueued_;
  }
  queued_.notify_one();
}

std::uint64_t HostStream::record() {
  std::lock_guard lock(mutex_);
  return enqueued_;
}

void HostStream::wait(std::uint64_t ticket) {
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return completed_ >= ticket; });
}

bool HostStream::done(std::uint64_t ticket) {
  std::lock_guard lock(mutex_);
  return completed_ >= ticket;
}

void HostStream::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    queued_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, and the queue is drained
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
    ++completed_;
    done_.notify_all();
  }
}

}  // namespace memplan::arena
