// The boundary of the C API: every entry point runs its body through guarded(), which turns each
// exception into a negative status code and a last-error message prefixed with the call and its
// arguments. Nothing is thrown across the C boundary.
#pragma once

#include <exception>
#include <string>
#include <utility>

#include "memplan/c/memplan_torch.h"

namespace memplan::c_api {

// The status code and message of the exception being handled (call inside a catch block).
[[nodiscard]] std::pair<int, std::string> current_exception_status() noexcept;

// set_last_error, declared here so that guarded() needs only this header.
int set_error(int code, std::string message);

// "<call>(device=N): <what>" (no device part for device < 0).
[[nodiscard]] std::string error_message(const char* call, int device, const std::string& what);

// Runs `body` (returning the call's int result, >= 0); on an exception keeps the error_message
// as this thread's last error and returns its code. `device` < 0: the call has none.
template <class Body>
int guarded(const char* call, int device, Body&& body) noexcept {
  try {
    return std::forward<Body>(body)();
  } catch (...) {
    auto [code, what] = current_exception_status();
    try {
      return set_error(code, error_message(call, device, what));
    } catch (...) {
      return code;  // no memory for the message: the code still says what happened
    }
  }
}

// For alloc and free, inside their catch block: records "<call>: <what>" as a callback failure
// (last_error.hpp). `call` names the arguments.
void record_callback_failed(const std::string& call) noexcept;

// The same, with the call described by `describe()` (formatting may throw: then the failure is
// still recorded and counted, without the call's arguments).
template <class Describe>
void callback_failed(Describe&& describe) noexcept {
  std::string call;
  try {
    call = std::forward<Describe>(describe)();
  } catch (...) {
    call = {};  // no memory: keep the code and the count
  }
  record_callback_failed(call);
}

}  // namespace memplan::c_api
