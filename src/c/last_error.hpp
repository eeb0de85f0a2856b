// The C API's error record. A control call returns a code and keeps its message for the calling
// thread (memplan_torch_last_error). alloc and free have no code to return, and PyTorch calls them
// from whatever thread frees a tensor, so their failures are also kept process-wide with a count
// (memplan_torch_callback_failures), which the Python side checks after a step.
#pragma once

#include <cstdint>
#include <string>

namespace memplan::c_api {

// Keeps `message` as this thread's last error and returns `code`.
int set_last_error(int code, std::string message);
void clear_last_error() noexcept;
[[nodiscard]] const char* last_error() noexcept;

// Records a failed alloc/free: this thread's last error, the process-wide record and its count.
void record_callback_failure(int code, std::string message);
[[nodiscard]] std::uint64_t callback_failures() noexcept;
// The process-wide message, copied into a per-thread buffer (valid until the next call here).
[[nodiscard]] const char* last_callback_error();
[[nodiscard]] int last_callback_status() noexcept;

}  // namespace memplan::c_api
