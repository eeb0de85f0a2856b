// The C API's error record: a per-thread last error, and a process-wide record of the failed
// alloc/free callbacks (see last_error.hpp).
#include "last_error.hpp"

#include <atomic>
#include <mutex>
#include <utility>

namespace memplan::c_api {
namespace {

thread_local std::string thread_error;

struct CallbackRecord {
  std::mutex mutex;
  std::string message;
  std::atomic<int> status{0};
  std::atomic<std::uint64_t> failures{0};
};

CallbackRecord& callback_record() {
  // Never destroyed: PyTorch may free tensors (and fail) while the process shuts down.
  static auto* record = new CallbackRecord;
  return *record;
}

}  // namespace

int set_last_error(int code, std::string message) {
  thread_error = std::move(message);
  return code;
}

void clear_last_error() noexcept { thread_error.clear(); }

const char* last_error() noexcept { return thread_error.c_str(); }

void record_callback_failure(int code, std::string message) {
  CallbackRecord& record = callback_record();
  {
    const std::lock_guard lock(record.mutex);
    record.message = message;
  }
  record.status.store(code, std::memory_order_relaxed);
  record.failures.fetch_add(1, std::memory_order_relaxed);
  set_last_error(code, std::move(message));
}

std::uint64_t callback_failures() noexcept {
  return callback_record().failures.load(std::memory_order_relaxed);
}

int last_callback_status() noexcept {
  return callback_record().status.load(std::memory_order_relaxed);
}

const char* last_callback_error() {
  thread_local std::string copy;
  CallbackRecord& record = callback_record();
  const std::lock_guard lock(record.mutex);
  copy = record.message;
  return copy.c_str();
}

}  // namespace memplan::c_api
