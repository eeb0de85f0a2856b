// Exceptions to status codes: each memplan error type has its code; anything else is internal.
#include "guarded.hpp"

#include <new>

#include "last_error.hpp"
#include "memplan/arena/pointer_errors.hpp"
#include "memplan/error.hpp"
#include "registry.hpp"

namespace memplan::c_api {

std::pair<int, std::string> current_exception_status() noexcept {
  try {
    try {
      throw;
    } catch (const arena::DoubleFree& e) {
      return {MEMPLAN_E_DOUBLE_FREE, e.what()};
    } catch (const InvalidPointer& e) {
      return {MEMPLAN_E_FOREIGN_POINTER, e.what()};
    } catch (const NotInitialised& e) {
      return {MEMPLAN_E_NOT_INITIALISED, e.what()};
    } catch (const Unsupported& e) {
      return {MEMPLAN_E_UNSUPPORTED, e.what()};
    } catch (const InvalidArgument& e) {
      return {MEMPLAN_E_INVALID_ARGUMENT, e.what()};
    } catch (const InvalidState& e) {
      return {MEMPLAN_E_INVALID_STATE, e.what()};
    } catch (const OutOfMemory& e) {
      return {MEMPLAN_E_OUT_OF_MEMORY, e.what()};
    } catch (const CudaError& e) {
      return {MEMPLAN_E_CUDA, e.what()};
    } catch (const std::bad_alloc&) {
      return {MEMPLAN_E_OUT_OF_MEMORY, "host memory exhausted (std::bad_alloc)"};
    } catch (const std::exception& e) {
      return {MEMPLAN_E_INTERNAL, e.what()};
    } catch (...) {
      return {MEMPLAN_E_INTERNAL, "unknown exception"};
    }
  } catch (...) {  // copying a message threw bad_alloc
    return {MEMPLAN_E_OUT_OF_MEMORY, {}};
  }
}

std::string error_message(const char* call, int device, const std::string& what) {
  if (device < 0) return std::string(call) + ": " + what;
  return std::string(call) + "(device=" + std::to_string(device) + "): " + what;
}

int set_error(int code, std::string message) { return set_last_error(code, std::move(message)); }

void record_callback_failed(const std::string& call) noexcept {
  auto [code, what] = current_exception_status();
  try {
    record_callback_failure(code, call + ": " + what);
  } catch (...) {
    record_callback_failure(code, {});  // no memory for the message; still counted
  }
}

}  // namespace memplan::c_api
