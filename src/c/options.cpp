// Conversions between the C API's structs and memplan's C++ types (options.hpp).
#include "options.hpp"

#include <bit>

#include <fmt/format.h>

#include "memplan/log.hpp"

namespace memplan::c_api {
namespace {

constexpr int kLogUnchanged = -1;
constexpr std::size_t kPoolChunkBytes = std::size_t{2} << 20;
constexpr int kLogOff = static_cast<int>(LogLevel::Off);

void keep_if_set(std::size_t& field, std::size_t value) {
  if (value != 0) field = value;
}

}  // namespace

memplan_torch_options to_c_options(const CompilerOptions& options) {
  return memplan_torch_options{.reserve_bytes = options.reserve_bytes,
                               .chunk_bytes = options.chunk_bytes,
                               .pool_reserve_bytes = options.pool_reserve_bytes,
                               .pool_chunk_bytes = options.pool_chunk_bytes,
                               .alignment = options.default_alignment,
                               .log_level = kLogUnchanged,
                               .plan_budget_ms = options.plan_budget.count(),
                               .share_pool_chunk = options.share_pool_chunk ? 1 : -1};
}

CompilerOptions default_compiler_options() {
  CompilerOptions options;
  // PyTorch hands the pool its weights and every tensor made outside steps one by one: 2 MiB
  // chunks (the granule of an H200 mapping, and the size of the caching allocator's small
  // segments) keep the pool's mapped bytes near its live bytes; 64 MiB chunks, the compiler's
  // default, cost a small model up to 64 MiB of padding.
  options.pool_chunk_bytes = kPoolChunkBytes;
  // And the pool lends the plans the rest of its top chunk (docs/pytorch.md: on every model
  // measured it saved a chunk or cost none; a graph's plans then share the pool's last chunk).
  options.share_pool_chunk = true;
  return options;
}

CompilerOptions to_compiler_options(const memplan_torch_options& c) {
  if (c.alignment != 0 && !std::has_single_bit(c.alignment)) {
    throw InvalidArgument(fmt::format("alignment {} is not a power of two", c.alignment));
  }
  if (c.log_level < kLogUnchanged || c.log_level > kLogOff) {
    throw InvalidArgument(
        fmt::format("log_level {} is outside -1..{} (-1 unchanged, 0 trace, "
                    "6 off)",
                    c.log_level, kLogOff));
  }
  CompilerOptions options = default_compiler_options();
  keep_if_set(options.reserve_bytes, c.reserve_bytes);
  keep_if_set(options.chunk_bytes, c.chunk_bytes);
  keep_if_set(options.pool_reserve_bytes, c.pool_reserve_bytes);
  keep_if_set(options.pool_chunk_bytes, c.pool_chunk_bytes);
  keep_if_set(options.default_alignment, c.alignment);
  if (c.plan_budget_ms < 0) {
    throw InvalidArgument(fmt::format("plan_budget_ms {} is negative", c.plan_budget_ms));
  }
  if (c.plan_budget_ms > 0) options.plan_budget = std::chrono::milliseconds(c.plan_budget_ms);
  if (c.share_pool_chunk < -1 || c.share_pool_chunk > 1) {
    throw InvalidArgument(fmt::format(
        "share_pool_chunk {} is outside -1..1 (1 on, 0 the default, -1 off)", c.share_pool_chunk));
  }
  // The lent chunk is mapped by both, so the two chunks are one size: asked for (1), sharing
  // refuses another pool chunk; by default (0) it yields to one.
  const bool pool_chunk_differs =
      c.pool_chunk_bytes != 0 && c.pool_chunk_bytes != options.chunk_bytes;
  if (c.share_pool_chunk == 1 && pool_chunk_differs) {
    throw InvalidArgument(
        fmt::format("share_pool_chunk needs pool_chunk_bytes equal to chunk_bytes ({} B), got {} B",
                    options.chunk_bytes, c.pool_chunk_bytes));
  }
  options.share_pool_chunk =
      c.share_pool_chunk == 1 || (c.share_pool_chunk == 0 && !pool_chunk_differs);
  if (options.share_pool_chunk) options.pool_chunk_bytes = options.chunk_bytes;
  return options;
}

void apply_log_level(int level) {
  if (level != kLogUnchanged) set_log_level(static_cast<LogLevel>(level));
}

memplan_torch_step_result to_c_result(const StepResult& r) {
  return memplan_torch_step_result{
      .kind = static_cast<int>(r.kind),
      .break_reason = r.break_reason ? static_cast<int>(*r.break_reason) : -1,
      .branch = r.branch ? static_cast<std::int64_t>(*r.branch) : -1,
      .step = r.step,
      .events = r.events,
      .recorded_allocations = r.recorded_allocations,
      .rogues = r.rogues,
      .parity = r.parity};
}

}  // namespace memplan::c_api
