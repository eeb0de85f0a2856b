/* The C API from C (C99, no C++ in sight): the header compiles as C and a step records, replays
 * and reports through it. Exits 0 on success, 1 with a message otherwise. */
#include <stdio.h>
#include <string.h>

#include "memplan/c/memplan_torch.h"

static int fail(const char* what) {
  fprintf(stderr, "c_caller: %s: %s\n", what, memplan_torch_last_error());
  return 1;
}

int main(void) {
  const int device = 3;
  memplan_torch_options options;
  memplan_torch_step_result result;
  void* first = NULL;
  int i;

  memplan_torch_default_options(&options);
  options.reserve_bytes = options.pool_reserve_bytes = (size_t)256 << 20;
  options.pool_chunk_bytes = (size_t)2 << 20;
  if (memplan_torch_configure(&options) != MEMPLAN_OK) return fail("configure");
  if (memplan_torch_init(device) != MEMPLAN_OK) return fail("init");
  for (i = 0; i < 3; ++i) {
    void* p;
    if (memplan_torch_begin_step(device, "c") != MEMPLAN_OK) return fail("begin_step");
    p = memplan_torch_alloc((size_t)1 << 20, device, NULL);
    if (p == NULL) return fail("alloc");
    memplan_torch_free(p, (size_t)1 << 20, device, NULL);
    if (memplan_torch_end_step(device, &result) != MEMPLAN_OK) return fail("end_step");
    if (i == 1) first = p;
    if (i == 2 && (result.kind != 0 || p != first)) return fail("replay");
  }
  if (memplan_torch_end_step(device, NULL) != MEMPLAN_E_INVALID_STATE) return fail("end twice");
  if (strstr(memplan_torch_stats_json(device), "\"steps_replayed\": 2") == NULL &&
      strstr(memplan_torch_stats_json(device), "\"steps_replayed\":2") == NULL) {
    return fail("stats");
  }
  printf("c_caller: %s on %s\n", memplan_torch_version(), memplan_torch_backend());
  return 0;
}
