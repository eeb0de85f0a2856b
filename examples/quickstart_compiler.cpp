// Quickstart, the memory compiler on the host backend: the first run of a step is recorded and
// planned, later runs replay the plan (same addresses, no allocator call). On a GPU, use
// memplan::arena::CudaVmmBackend and pass your CUDA stream to allocate/deallocate.
#include <cstdio>
#include <string_view>

#include "memplan/arena/host_backend.hpp"
#include "memplan/log.hpp"
#include "memplan/runtime/compiler.hpp"

int main() {
  // memplan's log is off by default; this routes it, from Info up, to the program's own output.
  memplan::set_log_sink([](memplan::LogLevel, std::string_view message) {
    std::printf("  memplan: %.*s\n", static_cast<int>(message.size()), message.data());
  });
  memplan::set_log_level(memplan::LogLevel::Info);

  memplan::arena::HostBackend backend;
  memplan::Compiler compiler(
      backend, {.reserve_bytes = std::size_t{1} << 30, .pool_reserve_bytes = std::size_t{1} << 30});

  void* first_activations = nullptr;
  for (int s = 0; s < 4; ++s) {
    auto step = compiler.step("denoise");  // ends the step at scope exit (aborts on an exception)
    void* activations = compiler.allocate(64 << 10);
    void* scratch = compiler.allocate(16 << 10, {}, "attention_workspace");  // tags must match
    compiler.deallocate(scratch);
    void* output = compiler.allocate(32 << 10);
    compiler.deallocate(activations);
    compiler.deallocate(output);
    if (s == 0) first_activations = activations;
    std::printf("step %d: activations at %p%s\n", s, activations,
                s > 0 && activations == first_activations ? ", as in step 0" : "");
  }

  const memplan::Stats stats = compiler.stats();
  std::printf("recorded %llu step(s), replayed %llu; planned arena %llu B\n",
              static_cast<unsigned long long>(stats.steps_recorded),
              static_cast<unsigned long long>(stats.steps_replayed),
              static_cast<unsigned long long>(stats.planned_peak_bytes));
  memplan::set_log_sink({});
  return stats.steps_replayed == 3 ? 0 : 1;
}
