// The public face of the compiler: each call takes the lock and hands over to Impl. Guards are
// thin RAII wrappers; a step guard unwound by an exception aborts its step.
#include "memplan/runtime/compiler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <mutex>

#include "check_mode.hpp"
#include "compiler_impl.hpp"
#include "core/log.hpp"
#include "planned_allocate.hpp"

namespace memplan {
namespace {

// Sizes past 256 TiB are a negative number cast to size_t, or a typo.
void check_size(std::string_view option, std::size_t bytes) {
  if (bytes == 0 || bytes > arena::kMaxReserveBytes) {
    throw InvalidArgument(fmt::format("CompilerOptions: {} {} is outside [1, {}]", option, bytes,
                                      arena::kMaxReserveBytes));
  }
}

// A chunk is what the arena maps at once, so it must be whole granules of the backend: rounding it
// up silently would make "mapped <= plan rounded up to the chunk" refer to another number.
void check_chunk(std::string_view option, std::size_t chunk, const arena::PhysicalBackend& backend,
                 std::size_t default_alignment) {
  check_size(option, chunk);
  const std::size_t granule = backend.granularity();
  if (chunk % granule != 0) {
    throw InvalidArgument(fmt::format(
        "CompilerOptions: {} {} is not a multiple of the {} backend's mapping granularity {} "
        "(the nearest above is {})",
        option, chunk, backend.name(), granule, (chunk / granule + 1) * granule));
  }
  if (chunk < default_alignment) {
    throw InvalidArgument(fmt::format("CompilerOptions: {} {} is smaller than default_alignment {}",
                                      option, chunk, default_alignment));
  }
}

CompilerOptions checked(CompilerOptions options, const arena::PhysicalBackend& backend) {
  if (options.branch_cap == 0) throw InvalidArgument("CompilerOptions: branch_cap must be >= 1");
  if (!std::has_single_bit(options.default_alignment) || options.default_alignment > 4096) {
    throw InvalidArgument(
        fmt::format("CompilerOptions: default_alignment {} is not a power of two in [1, 4096]",
                    options.default_alignment));
  }
  check_size("reserve_bytes", options.reserve_bytes);
  check_size("pool_reserve_bytes", options.pool_reserve_bytes);
  check_chunk("chunk_bytes", options.chunk_bytes, backend, options.default_alignment);
  check_chunk("pool_chunk_bytes", options.pool_chunk_bytes, backend, options.default_alignment);
  return options;
}

// What last_stream holds until the first allocation: no stream has this address, so the first
// stream used (the default stream, nullptr, included) is registered like any other.
StreamRef no_stream_yet() noexcept {
  static constinit char marker = 0;
  return StreamRef{&marker};
}

}  // namespace

Compiler::Impl::Impl(arena::PhysicalBackend& backend_, CompilerOptions options_)
    : backend(backend_),
      options(checked(std::move(options_), backend_)),
      default_alignment(to_bytes(options.default_alignment)),
      budget(backend_, options.memory_budget_bytes != 0 ? options.memory_budget_bytes
                                                        : std::numeric_limits<std::size_t>::max()),
      arena(budget, options.reserve_bytes,
            arena::ArenaOptions{.chunk_bytes = options.chunk_bytes, .name = "planned arena"}),
      pool(budget, arena::PoolOptions{.reserve_bytes = options.pool_reserve_bytes,
                                      .chunk_bytes = options.pool_chunk_bytes,
                                      .name = "persistent pool"}),
      share_pool_chunk(options.share_pool_chunk &&
                       arena.raw().chunk_bytes() == pool.arena().chunk_bytes()),
      lock(options.thread_safe),
      last_stream(no_stream_yet()) {}

Compiler::Compiler(arena::PhysicalBackend& backend, CompilerOptions options)
    : impl_(std::make_unique<Impl>(backend, std::move(options))),
      check_(impl_->options.check.enabled() ? std::make_unique<Check>(backend, impl_->options)
                                            : nullptr) {}

Compiler::~Compiler() {
  if (impl_ == nullptr) return;
  if (impl_->cursor.running()) impl_->abort_step();
  if (!impl_->rogues.empty()) {
    logger().warn("compiler destroyed with {} live rogue(s) ({} B); their memory is unmapped",
                  impl_->stats.live_rogues, impl_->stats.live_rogue_bytes);
  }
  try {
    impl_->end_loan();  // the arena lets the pool's chunk go before the pool unmaps it
  } catch (const std::exception& e) {
    logger().error("compiler destroyed: returning the pool's chunk: {}", e.what());
  }
}

void* Compiler::allocate(std::size_t bytes, StreamRef stream, std::string_view tag,
                         std::size_t alignment) {
  if (check_ != nullptr) [[unlikely]]
    return check_->allocate(*this, bytes, stream, tag, alignment);
  const std::lock_guard guard(impl_->lock);
  return allocate_planned(bytes, stream, tag, alignment);
}

// The lock is held. The stream becomes a user of the arena and the pool: unmapping waits for it.
void Compiler::use_stream(StreamRef stream) {
  if (std::find(impl_->streams.begin(), impl_->streams.end(), stream) != impl_->streams.end())
    return;
  impl_->arena.raw().add_user(stream);
  impl_->pool.arena().add_user(stream);
  impl_->streams.push_back(stream);
}

bool Compiler::forget_stream(StreamRef stream) {
  const std::lock_guard guard(impl_->lock);
  const auto it = std::find(impl_->streams.begin(), impl_->streams.end(), stream);
  if (it == impl_->streams.end()) return false;
  // Each removal waits for the stream's queued work first. Checked one by one, so a call that
  // failed half way (a fence error) can be repeated.
  for (arena::Arena* a : {&impl_->arena.raw(), &impl_->pool.arena()}) {
    if (a->users().contains(stream)) a->remove_user(stream);
  }
  impl_->streams.erase(it);
  // The fast path of allocate() skips registration for last_stream; a new stream may come at the
  // same address.
  if (impl_->last_stream == stream) impl_->last_stream = no_stream_yet();
  return true;
}

void Compiler::deallocate(void* p, StreamRef stream) {
  if (check_ != nullptr) [[unlikely]]
    return check_->deallocate(*this, p, stream);
  const std::lock_guard guard(impl_->lock);
  if (impl_->try_replay_free(p)) [[likely]]
    return;
  impl_->deallocate(p);
}

void Compiler::begin_step(std::string_view name) {
  const std::lock_guard guard(impl_->lock);
  impl_->lock.claim_ownership();  // the first step's thread gets the lock's fast path
  try {
    impl_->begin_step(name);
  } catch (const OutOfMemory& e) {
    impl_->rethrow_begin_step_failure(name, e);
  }
}

StepResult Compiler::end_step() {
  const std::lock_guard guard(impl_->lock);
  return impl_->end_step();
}

std::optional<StepResult> Compiler::step_so_far() const {
  const std::lock_guard guard(impl_->lock);
  if (!impl_->cursor.running()) return std::nullopt;
  return impl_->cursor.result();
}

void Compiler::abort_step() noexcept {
  const std::lock_guard guard(impl_->lock);
  impl_->abort_step();
}

void Compiler::begin_scope(std::string_view name) {
  const std::lock_guard guard(impl_->lock);
  impl_->scopes.emplace_back(name);
}

void Compiler::end_scope() {
  const std::lock_guard guard(impl_->lock);
  if (impl_->scopes.empty()) throw InvalidState("end_scope: no scope is open");
  impl_->scopes.pop_back();
}

void Compiler::begin_pause() {
  const std::lock_guard guard(impl_->lock);
  ++impl_->pause_depth;
  if (impl_->cursor.running()) ++impl_->pauses_in_step;
}

void Compiler::end_pause() {
  const std::lock_guard guard(impl_->lock);
  if (impl_->pause_depth == 0) throw InvalidState("end_pause: no pause is open");
  --impl_->pause_depth;
  if (impl_->cursor.running() && impl_->pauses_in_step > 0) --impl_->pauses_in_step;
}

StepGuard Compiler::step(std::string_view name) {
  begin_step(name);
  return StepGuard(*this);
}

ScopeGuard Compiler::scope(std::string_view name) {
  begin_scope(name);
  return ScopeGuard(*this);
}

PauseGuard Compiler::pause() {
  begin_pause();
  return PauseGuard(*this);
}

bool Compiler::in_step() const {
  const std::lock_guard guard(impl_->lock);
  return impl_->cursor.running();
}

Stats Compiler::stats() const {
  const std::lock_guard guard(impl_->lock);
  return impl_->snapshot();
}

std::vector<BreakRecord> Compiler::breaks() const {
  const std::lock_guard guard(impl_->lock);
  return impl_->break_log;
}

std::string Compiler::report() const {
  const std::lock_guard guard(impl_->lock);
  return check_ != nullptr ? impl_->report() + check_->summary() : impl_->report();
}

std::string Compiler::report_json() const {
  const std::lock_guard guard(impl_->lock);
  return impl_->report_json();
}

std::vector<std::pair<std::string, std::size_t>> Compiler::step_branches() const {
  const std::lock_guard guard(impl_->lock);
  std::vector<std::pair<std::string, std::size_t>> out;
  for (const auto& [name, t] : impl_->trees) out.emplace_back(name, t->tree.branch_count());
  return out;
}

BranchTrace Compiler::branch_trace(std::string_view step, std::size_t branch) const {
  const std::lock_guard guard(impl_->lock);
  return impl_->branch_trace(step, branch);
}

void Compiler::trim() {
  const std::lock_guard guard(impl_->lock);
  if (impl_->cursor.running()) throw InvalidState("trim: a step is running");
  impl_->trim_arena();
  impl_->pool.trim();
  if (check_ != nullptr) check_->trim();
}

void Compiler::trim_to(std::span<const BranchRef> held) {
  const std::lock_guard guard(impl_->lock);
  impl_->trim_to(held);
  impl_->pool.trim();
  if (check_ != nullptr) check_->trim();
}

bool Compiler::settle() {
  const std::lock_guard guard(impl_->lock);
  if (impl_->cursor.running()) throw InvalidState("settle: a step is running");
  return impl_->settle_window();
}

void Compiler::release() {
  const std::lock_guard guard(impl_->lock);
  if (impl_->cursor.running()) throw InvalidState("release: a step is running");
  if (!impl_->rogues.empty()) {
    throw InvalidState(fmt::format("release: {} rogue(s) ({} B) still live in the arena",
                                   impl_->stats.live_rogues, impl_->stats.live_rogue_bytes));
  }
  // An output of a finished step still live in the plans (period two) keeps its chunks.
  impl_->arena.raw().keep_only(impl_->live_ranges());
  impl_->drop_unused_loan();
  impl_->plans_have_holes = false;  // the next step maps its tree's extent back at begin_step
  if (check_ != nullptr) check_->trim();
}

void* Compiler::arena_base() const noexcept { return impl_->arena.raw().base(); }
const CompilerOptions& Compiler::options() const noexcept { return impl_->options; }

StepGuard::StepGuard(Compiler& compiler)
    : compiler_(&compiler), exceptions_(std::uncaught_exceptions()) {}

StepGuard::StepGuard(StepGuard&& other) noexcept
    : compiler_(std::exchange(other.compiler_, nullptr)), exceptions_(other.exceptions_) {}

StepGuard::~StepGuard() {
  if (compiler_ == nullptr) return;
  if (std::uncaught_exceptions() > exceptions_) {
    compiler_->abort_step();
    return;
  }
  try {
    compiler_->end_step();
  } catch (const std::exception& e) {
    logger().error("step guard: end_step failed ({}); the step is aborted", e.what());
    compiler_->abort_step();
  }
}

std::optional<StepResult> StepGuard::end() {
  Compiler* c = std::exchange(compiler_, nullptr);
  if (c == nullptr) return std::nullopt;
  return c->end_step();
}

ScopeGuard::~ScopeGuard() {
  if (compiler_ == nullptr) return;
  try {
    compiler_->end_scope();
  } catch (const std::exception& e) {
    logger().error("scope guard: {}", e.what());
  }
}

PauseGuard::~PauseGuard() {
  if (compiler_ == nullptr) return;
  try {
    compiler_->end_pause();
  } catch (const std::exception& e) {
    logger().error("pause guard: {}", e.what());
  }
}

}  // namespace memplan
