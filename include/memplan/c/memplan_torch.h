/* memplan's C API: the memory compiler behind a plain C ABI, for PyTorch's
 * torch.cuda.memory.CUDAPluggableAllocator and for ctypes (python/memplan).
 *
 * One compiler per device, created by memplan_torch_init() or lazily by the first
 * memplan_torch_alloc() on the device, with the options of memplan_torch_configure(). Two libraries
 * export this API from the same sources: libmemplan_torch.so on the CUDA VMM backend (streams are
 * cudaStream_t, devices CUDA ordinals) and libmemplan_c_host.so on the host backend (CPU memory;
 * streams must be NULL, devices are 0..MEMPLAN_TORCH_MAX_DEVICES-1), so everything is tested
 * without a GPU.
 *
 * Errors: control calls return MEMPLAN_OK (0) or a negative MEMPLAN_E_* code and keep a message
 * naming the numbers for memplan_torch_last_error() (per thread). alloc and free cannot return a
 * code to PyTorch: alloc returns NULL, free returns; both keep the message (per thread, and also in
 * the process-wide callback record, since PyTorch may call them from any thread) and count the
 * failure. No call lets an exception out, and a failed call leaves the plan as it was.
 *
 * Strings returned (JSON, report, errors, version) stay valid until the same call is made again on
 * the same thread; copy them (ctypes' c_char_p does). Everything here is thread-safe. */
#ifndef MEMPLAN_C_MEMPLAN_TORCH_H
#define MEMPLAN_C_MEMPLAN_TORCH_H

#include <stddef.h>
#include <stdint.h>

#if defined(MEMPLAN_TORCH_BUILD)
#define MEMPLAN_TORCH_API __attribute__((visibility("default")))
#else
#define MEMPLAN_TORCH_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define MEMPLAN_TORCH_MAX_DEVICES 64

/* Return codes of the control calls. */
enum memplan_torch_status {
  MEMPLAN_OK = 0,
  MEMPLAN_E_INVALID_ARGUMENT = -1, /* a value outside what the call accepts */
  MEMPLAN_E_INVALID_STATE = -2,    /* e.g. a step ended twice, a scope popped that is not open */
  MEMPLAN_E_FOREIGN_POINTER = -3,  /* a pointer memplan never gave out */
  MEMPLAN_E_DOUBLE_FREE = -4,      /* a pointer freed already */
  MEMPLAN_E_OUT_OF_MEMORY = -5,
  MEMPLAN_E_CUDA = -6,            /* the CUDA driver or runtime failed (or is missing) */
  MEMPLAN_E_NOT_INITIALISED = -7, /* the device has no compiler yet */
  MEMPLAN_E_UNSUPPORTED = -8,     /* not in this build (attention in the host library) */
  MEMPLAN_E_INTERNAL = -9         /* anything else: the message says what */
};

/* Options of the compilers created after memplan_torch_configure(). Zero fields keep the default.
 */
typedef struct memplan_torch_options {
  size_t reserve_bytes;      /* planned arena's address space (default 64 GiB) */
  size_t chunk_bytes;        /* planned arena's mapping granularity (default 2 MiB) */
  size_t pool_reserve_bytes; /* persistent pool's address space (default 64 GiB) */
  size_t pool_chunk_bytes;   /* persistent pool's chunk (default 64 MiB) */
  size_t alignment;          /* every pointer is aligned to this (default 256) */
  int log_level; /* 0 trace, 1 debug, 2 info, 3 warn, 4 error, 5 critical, 6 off; -1 unchanged */
  int64_t plan_budget_ms; /* the planner's search time for one branch (default 200) */
  /* 1: the pool lends the plans the rest of its top chunk (CompilerOptions::share_pool_chunk,
   * docs/compiler.md "The chunk the pool lends"; needs pool_chunk_bytes 0 or chunk_bytes);
   * -1 off; 0 the default: on, unless pool_chunk_bytes differs from chunk_bytes. */
  int share_pool_chunk;
} memplan_torch_options;

/* What memplan_torch_end_step() says of the step. */
typedef struct memplan_torch_step_result {
  int kind;         /* 0 replayed, 1 recorded, 2 dynamic (past the branch cap) */
  int break_reason; /* -1 none, 0 unknown allocation, 1 range occupied, 2 unexpected end */
  int64_t branch;   /* the branch that served or recorded it, -1 for a dynamic step */
  uint64_t step;    /* serial number over all steps of the device */
  uint64_t events;  /* allocations and frees of the step */
  uint64_t recorded_allocations;
  uint64_t rogues; /* allocations of the step still live at its end */
  int parity;      /* which of its branch's two plans served it: 1 only on a branch whose output is
                      kept until the next step's exists (period two); a graph holds that plan's */
} memplan_torch_step_result;

/* A branch whose plan a CUDA graph holds: the step's name and the branch and parity that
 * memplan_torch_end_step() reported for the step that captured it. */
typedef struct memplan_torch_branch_ref {
  const char* step;
  int64_t branch;
  int parity;
} memplan_torch_branch_ref;

/* Block-sparse attention policy (memplan::attention::AttentionPolicy). */
typedef struct memplan_torch_attention_policy {
  int mode; /* 0 dense, 1 tau, 2 topk, 3 coarse */
  float tau;
  float keep_percent;
  float max_keep_percent;
  int sink_keys_begin, sink_keys_end;       /* 64-token blocks */
  int sink_queries_begin, sink_queries_end; /* 64-token blocks */
  double window_start, window_end;          /* sparse only for step fractions in the window */
  int64_t min_tokens;
  float coarse_gate;
  /* Query blocks sharing one key-block list: 1, a list per 64-token query block; 2, one list per
   * pair of query blocks (2i, 2i + 1), chosen from the pair's mean scores with both blocks'
   * diagonal bands forced. 0 means 1, so a zero-initialised field keeps the default; any other
   * value is MEMPLAN_E_INVALID_ARGUMENT. Last, in what was the struct's tail padding. */
  int query_blocks_per_list;
} memplan_torch_attention_policy;

/* The allocator pair for CUDAPluggableAllocator. size 0 returns NULL, as PyTorch's caching
 * allocator does for empty tensors; free(NULL) does nothing. The stream is a cudaStream_t. */
MEMPLAN_TORCH_API void* memplan_torch_alloc(size_t size, int device, void* stream);
MEMPLAN_TORCH_API void memplan_torch_free(void* ptr, size_t size, int device, void* stream);

MEMPLAN_TORCH_API const char* memplan_torch_version(void);
/* The library's backend: "cuda-vmm" or "host". */
MEMPLAN_TORCH_API const char* memplan_torch_backend(void);
/* Fills `options` with the defaults. */
MEMPLAN_TORCH_API void memplan_torch_default_options(memplan_torch_options* options);
/* Options for compilers created from now on (existing ones keep theirs); sets the log level. */
MEMPLAN_TORCH_API int memplan_torch_configure(const memplan_torch_options* options);
/* Creates the device's compiler now; MEMPLAN_OK if it exists already. */
MEMPLAN_TORCH_API int memplan_torch_init(int device);
/* 1 if the device has a compiler, 0 if not (or the device is out of range). */
MEMPLAN_TORCH_API int memplan_torch_initialised(int device);

MEMPLAN_TORCH_API int memplan_torch_begin_step(int device, const char* name);
/* `result` may be NULL. */
MEMPLAN_TORCH_API int memplan_torch_end_step(int device, memplan_torch_step_result* result);
/* Ends the running step without learning from it (after an exception); no-op between steps. */
MEMPLAN_TORCH_API int memplan_torch_abort_step(int device);
MEMPLAN_TORCH_API int memplan_torch_push_scope(int device, const char* name);
MEMPLAN_TORCH_API int memplan_torch_pop_scope(int device);
MEMPLAN_TORCH_API int memplan_torch_pause(int device);
MEMPLAN_TORCH_API int memplan_torch_resume(int device);
/* Between steps: unmap what the plans do not need / unmap all planned memory. */
MEMPLAN_TORCH_API int memplan_torch_trim(int device);
/* Between steps: unmap all planned memory but the chunks the `count` branches' plans use and those
 * of the live buffers (graphs launched outside steps hold those branches). A later step maps back
 * what it uses as it allocates: backend calls in a step of a branch not held. `held` may be NULL
 * when `count` is 0 (then only the live buffers stay mapped). An unknown step, branch or parity is
 * MEMPLAN_E_INVALID_ARGUMENT, a running step MEMPLAN_E_INVALID_STATE; nothing is unmapped then. */
MEMPLAN_TORCH_API int memplan_torch_trim_to(int device, const memplan_torch_branch_ref* held,
                                            size_t count);
MEMPLAN_TORCH_API int memplan_torch_release(int device);
/* Between steps, with share_pool_chunk: when nothing lives in the planned arena, moves the plans
 * home (past the pool's bytes in its top chunk, when that saves the largest plan a chunk);
 * Compiler::settle(). A CUDA graph captured before a move sees it in the plan epoch. `moved` (may
 * be NULL) is 1 if the plans moved, else 0. A running step is MEMPLAN_E_INVALID_STATE. */
MEMPLAN_TORCH_API int memplan_torch_settle(int device, int* moved);

/* What a CUDA graph launched outside steps depends on, two of the compiler's counters: the plans
 * moved clear of live rogues (window_moves), a step left an output planned in the arena
 * (carried_outputs). A graph captured under other values may hold addresses the plans no longer
 * keep for it. The cheap check before each launch (stats_json formats every counter). */
typedef struct memplan_torch_plan_epoch {
  uint64_t window_moves;
  uint64_t carried_outputs;
} memplan_torch_plan_epoch;

MEMPLAN_TORCH_API int memplan_torch_plan_epoch_of(int device, memplan_torch_plan_epoch* epoch);

/* memplan::to_json(Stats), or NULL on error. */
MEMPLAN_TORCH_API const char* memplan_torch_stats_json(int device);
/* The compiler's readable report, or NULL on error. */
MEMPLAN_TORCH_API const char* memplan_torch_report(int device);
/* Writes branch `branch` of step `step` (the report lists both) as a planner problem with its
 * plan: by the path's extension MiniMalloc CSV (.csv) or memplan's JSON trace (.json), with the
 * planned offsets and tags, or a picture (.svg, .html). `memplan plan` re-plans the file. */
MEMPLAN_TORCH_API int memplan_torch_write_branch_trace(int device, const char* step, int64_t branch,
                                                       const char* path);

/* The last error of a call on this thread ("" if none); memplan_torch_clear_error() empties it. */
MEMPLAN_TORCH_API const char* memplan_torch_last_error(void);
MEMPLAN_TORCH_API void memplan_torch_clear_error(void);
/* Failed alloc/free calls so far (any thread), and the message and status code of the last one
 * ("" and MEMPLAN_OK if none). */
MEMPLAN_TORCH_API uint64_t memplan_torch_callback_failures(void);
MEMPLAN_TORCH_API const char* memplan_torch_last_callback_error(void);
MEMPLAN_TORCH_API int memplan_torch_last_callback_status(void);

/* Block-sparse attention on contiguous bf16 [batch, tokens, heads, head_dim] device tensors, its
 * workspace allocated from the device's compiler (the running step) on `stream` and freed after
 * the launch in stream order. Returns the mode launched (>= 0) or a negative code. */
MEMPLAN_TORCH_API int memplan_torch_attention(int device, const void* q, const void* k,
                                              const void* v, void* out, int batch, int64_t tokens,
                                              int heads, int head_dim,
                                              const memplan_torch_attention_policy* policy,
                                              double step_fraction, void* stream);
/* RoPE on q and k in place, then the attention above of the rotated q and k (one call; q and k
 * hold the rotated values afterwards). `rope_table` is fp32 [tokens, head_dim / 2, 2], entry
 * (t, j) = (cos, sin) of pair j at token t, 16-byte aligned; `rope_pairs` 0 rotates dims
 * (2j, 2j + 1) (interleaved, as complex numbers), 1 dims (j, j + head_dim / 2) (halves, as
 * rotate_half). In a sparse step the RoPE kernel also writes selection's pooled means, so
 * attention does not read q and k again to pool them; the output equals RoPE followed by
 * memplan_torch_attention bit for bit. Returns the mode launched (>= 0) or a negative code. */
MEMPLAN_TORCH_API int memplan_torch_rope_attention(int device, void* q, void* k, const void* v,
                                                   void* out, const float* rope_table,
                                                   int rope_pairs, int batch, int64_t tokens,
                                                   int heads, int head_dim,
                                                   const memplan_torch_attention_policy* policy,
                                                   double step_fraction, void* stream);
/* Bytes of workspace either attention call takes for this shape and policy, or a negative code. */
MEMPLAN_TORCH_API int64_t
memplan_torch_attention_workspace_bytes(int batch, int64_t tokens, int heads, int head_dim,
                                        const memplan_torch_attention_policy* policy);

#ifdef __cplusplus
}
#endif

#endif /* MEMPLAN_C_MEMPLAN_TORCH_H */
