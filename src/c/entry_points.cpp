// The C API's entry points (include/memplan/c/memplan_torch.h): each one checks its arguments,
// finds the device's compiler in the registry and calls its public API inside guarded(), so every
// exception becomes a status code and a message naming the call and its numbers.
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "guarded.hpp"
#include "last_error.hpp"
#include "memplan/c/memplan_torch.h"
#include "memplan/runtime/branch_trace.hpp"
#include "memplan/runtime/stats.hpp"
#include "memplan/runtime/stats_json.hpp"
#include "memplan/version.hpp"
#include "options.hpp"
#include "registry.hpp"

using namespace memplan;
using namespace memplan::c_api;

namespace {

std::string_view checked_name(const char* name) {
  if (name == nullptr) throw InvalidArgument("the name is NULL");
  return name;
}

// A string result kept for the calling thread until its next call of the same kind.
const char* keep(std::string& slot, std::string value) {
  slot = std::move(value);
  return slot.c_str();
}

// A control call: `f` on the device's existing compiler, its exceptions turned into codes.
template <class F>
int control(const char* call, int device, F&& f) noexcept {
  return guarded(call, device, [&] {
    f(existing_compiler(device));
    return MEMPLAN_OK;
  });
}

}  // namespace

extern "C" {

void* memplan_torch_alloc(size_t size, int device, void* stream) {
  if (size == 0) return nullptr;  // as PyTorch's caching allocator: empty tensors hold no memory
  try {
    return compiler_for(device).allocate(size, StreamRef{stream});
  } catch (...) {
    callback_failed([&] {
      return fmt::format("memplan_torch_alloc(size={}, device={}, stream={})", size, device,
                         stream);
    });
    // PyTorch's pluggable allocator does not check for NULL: say why before a kernel faults.
    std::fprintf(stderr, "[memplan E] %s\n", last_error());
    return nullptr;
  }
}

void memplan_torch_free(void* ptr, size_t size, int device, void* stream) {
  if (ptr == nullptr) return;
  try {
    existing_compiler(device).deallocate(ptr, StreamRef{stream});
  } catch (...) {
    callback_failed([&] {
      return fmt::format("memplan_torch_free(ptr={}, size={}, device={}, stream={})", ptr, size,
                         device, stream);
    });
  }
}

const char* memplan_torch_version(void) { return MEMPLAN_VERSION_STRING; }

const char* memplan_torch_backend(void) { return backend_name(); }

void memplan_torch_default_options(memplan_torch_options* options) {
  if (options != nullptr) *options = to_c_options(default_compiler_options());
}

int memplan_torch_configure(const memplan_torch_options* options) {
  return guarded("memplan_torch_configure", -1, [&] {
    if (options == nullptr) throw InvalidArgument("the options are NULL");
    set_default_options(to_compiler_options(*options));
    apply_log_level(options->log_level);
    return MEMPLAN_OK;
  });
}

int memplan_torch_init(int device) {
  return guarded("memplan_torch_init", device, [&] {
    (void)compiler_for(device);
    return MEMPLAN_OK;
  });
}

int memplan_torch_initialised(int device) { return find_compiler(device) != nullptr ? 1 : 0; }

int memplan_torch_begin_step(int device, const char* name) {
  return control("memplan_torch_begin_step", device,
                 [&](Compiler& c) { c.begin_step(checked_name(name)); });
}

int memplan_torch_end_step(int device, memplan_torch_step_result* result) {
  constexpr const char* call = "memplan_torch_end_step";
  return guarded(call, device, [&] {
    const StepResult r = existing_compiler(device).end_step();
    if (result != nullptr) *result = to_c_result(r);
    return MEMPLAN_OK;
  });
}

int memplan_torch_abort_step(int device) {
  return control("memplan_torch_abort_step", device, [&](Compiler& c) { c.abort_step(); });
}

int memplan_torch_push_scope(int device, const char* name) {
  return control("memplan_torch_push_scope", device,
                 [&](Compiler& c) { c.begin_scope(checked_name(name)); });
}

int memplan_torch_pop_scope(int device) {
  return control("memplan_torch_pop_scope", device, [&](Compiler& c) { c.end_scope(); });
}

int memplan_torch_pause(int device) {
  return control("memplan_torch_pause", device, [&](Compiler& c) { c.begin_pause(); });
}

int memplan_torch_resume(int device) {
  return control("memplan_torch_resume", device, [&](Compiler& c) { c.end_pause(); });
}

int memplan_torch_trim(int device) {
  return control("memplan_torch_trim", device, [&](Compiler& c) { c.trim(); });
}

int memplan_torch_trim_to(int device, const memplan_torch_branch_ref* held, size_t count) {
  return control("memplan_torch_trim_to", device, [&](Compiler& c) {
    if (held == nullptr && count > 0) {
      throw InvalidArgument(fmt::format("held is NULL with count {}", count));
    }
    std::vector<BranchRef> refs;
    refs.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      const memplan_torch_branch_ref& r = held[i];
      if (r.step == nullptr) throw InvalidArgument(fmt::format("held[{}].step is NULL", i));
      if (r.branch < 0 || r.branch > std::numeric_limits<std::uint32_t>::max()) {
        throw InvalidArgument(fmt::format("held[{}]: branch {} of step '{}' is not a branch id", i,
                                          r.branch, r.step));
      }
      if (r.parity != 0 && r.parity != 1) {
        throw InvalidArgument(
            fmt::format("held[{}]: parity {} of step '{}' is not 0 or 1", i, r.parity, r.step));
      }
      refs.push_back(BranchRef{r.step, static_cast<std::uint32_t>(r.branch),
                               static_cast<std::uint8_t>(r.parity)});
    }
    c.trim_to(refs);
  });
}

int memplan_torch_release(int device) {
  return control("memplan_torch_release", device, [&](Compiler& c) { c.release(); });
}

int memplan_torch_settle(int device, int* moved) {
  return control("memplan_torch_settle", device, [&](Compiler& c) {
    const bool did = c.settle();
    if (moved != nullptr) *moved = did ? 1 : 0;
  });
}

int memplan_torch_plan_epoch_of(int device, memplan_torch_plan_epoch* epoch) {
  return control("memplan_torch_plan_epoch_of", device, [&](Compiler& c) {
    if (epoch == nullptr) throw InvalidArgument("the epoch is NULL");
    const Stats stats = c.stats();
    epoch->window_moves = stats.window_moves;
    epoch->carried_outputs = stats.carried_outputs;
  });
}

const char* memplan_torch_stats_json(int device) {
  constexpr const char* call = "memplan_torch_stats_json";
  thread_local std::string json;
  const char* out = nullptr;
  guarded(call, device, [&] {
    out = keep(json, to_json(existing_compiler(device).stats()));
    return MEMPLAN_OK;
  });
  return out;
}

const char* memplan_torch_report(int device) {
  constexpr const char* call = "memplan_torch_report";
  thread_local std::string report;
  const char* out = nullptr;
  guarded(call, device, [&] {
    out = keep(report, existing_compiler(device).report());
    return MEMPLAN_OK;
  });
  return out;
}

int memplan_torch_write_branch_trace(int device, const char* step, int64_t branch,
                                     const char* path) {
  return control("memplan_torch_write_branch_trace", device, [&](Compiler& c) {
    if (path == nullptr) throw InvalidArgument("the path is NULL");
    if (branch < 0) throw InvalidArgument(fmt::format("branch {} is negative", branch));
    write_branch_trace(path, c.branch_trace(checked_name(step), static_cast<std::size_t>(branch)));
  });
}

const char* memplan_torch_last_error(void) { return last_error(); }

void memplan_torch_clear_error(void) { clear_last_error(); }

uint64_t memplan_torch_callback_failures(void) { return callback_failures(); }

int memplan_torch_last_callback_status(void) { return last_callback_status(); }

const char* memplan_torch_last_callback_error(void) {
  try {
    return last_callback_error();
  } catch (...) {
    return "";
  }
}

}  // extern "C"
