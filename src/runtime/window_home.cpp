// Where the plans' window goes, and the chunk the pool lends it. The planned arena and the
// persistent pool map whole chunks each, so each pads its last chunk: a small step beside a large
// model pays up to two chunks more than it needs. When the pool's top chunk is partly used, the
// pool lends the rest of it (PersistentPool::lend), the arena maps that chunk at the slot where
// the window starts (Arena::borrow), and the window starts past the pool's bytes in it (and a
// little room the pool keeps for small allocations later): then a plan whose last chunk has room
// for that start needs one chunk less of the arena's own, and none needs more. All plans share the
// window's start, so the start is kept low (which plans stay mapped is not known here: trim_to
// keeps only those CUDA graphs hold), and a loan is taken when it saves the largest plan a chunk.
//
// Opt-in (CompilerOptions::share_pool_chunk): without it the window stays where rogues left it,
// at whole chunks, as it always did. With no rogue and no carried output live, the window goes
// home: the loan at slot 0, or offset 0
// without one. With rogues live it moves, when one lies in it, to the lowest whole chunk clear of
// them, with the loan moved there when no rogue lives in the loan's slot. Moves happen only where
// plans change anyway: at the end of a recording, at the start of a step never seen (it records)
// once the last rogue has died since the window moved away, and when rogues appear. A replayed
// step never moves it (guarantee 2), nor do trim(), trim_to() and release(), which keep the plans'
// addresses (guarantee 3). Graphs held over old addresses see a move in Stats::window_moves.
#include <fmt/format.h>

#include "compiler_impl.hpp"
#include "core/log.hpp"

namespace memplan {
namespace {

// Where a loan may start: the plans' offsets keep every alignment the compiler hands out.
constexpr Bytes kLoanAlignment = static_cast<Bytes>(arena::PersistentPool::kMaxAlignment);
// Of the lent chunk, the pool keeps this share beyond its bytes for allocations made later
// (pause scopes, inputs copied for a capture): 128 KiB of a 2 MiB chunk.
constexpr Bytes kPoolRoomShare = 16;

}  // namespace

// Where the window starts in the lent chunk for plans of `need` bytes: the current loan's start
// while the pool's bytes stay below it, else past the pool's bytes and its room. nullopt when the
// pool has no chunk to lend, or when the loan would not save the largest plan a chunk (a loan that
// saves nothing would keep the pool from trimming that chunk once its bytes there are freed).
std::optional<Bytes> Compiler::Impl::loan_start(Bytes need) const {
  if (!share_pool_chunk || need <= 0) return std::nullopt;
  const std::optional<std::size_t> pool_bytes = pool.lendable_from();
  if (!pool_bytes) return std::nullopt;
  const Bytes alignment = std::max(kLoanAlignment, plan_alignment);
  Bytes start = align_up(to_bytes(*pool_bytes) + arena.chunk() / kPoolRoomShare, alignment);
  if (pool.loan() && pool.loan()->from >= *pool_bytes &&
      to_bytes(pool.loan()->from) % alignment == 0) {
    start = to_bytes(pool.loan()->from);
  }
  if (start >= arena.chunk() || start > align_up(need, arena.chunk()) - need) return std::nullopt;
  return start;
}

// A loan may move to another slot only when no rogue lives in the slot it is at.
bool Compiler::Impl::loan_movable() const {
  return !pool.loan() || rogues.clear_of_chunks(loan_slot, arena.chunk(), arena.chunk());
}

// The slot of a loan the window is not on (a rogue keeps it where it was): the pool's bytes there
// are no place for plans, so placement and recordings keep clear of it.
std::optional<std::pair<Bytes, Bytes>> Compiler::Impl::loan_left_behind() const {
  if (!pool.loan() || rogues.window() == loan_slot + to_bytes(pool.loan()->from)) {
    return std::nullopt;
  }
  return std::pair{loan_slot, loan_slot + arena.chunk()};
}

// The lowest place clear of the rogues for plans of `need` bytes: with the loan where it can be,
// else clear of the loan's slot too (the loan stays there).
std::optional<Compiler::Impl::WindowPlace> Compiler::Impl::clear_place(Bytes need) const {
  if (const std::optional<Bytes> start = loan_movable() ? loan_start(need) : std::nullopt) {
    if (const std::optional<Bytes> slot =
            rogues.clear_chunk(*start + need, arena.chunk(), arena.reserved())) {
      return WindowPlace{.window = *slot + *start, .slot = *slot, .lent = true};
    }
  }
  std::optional<std::pair<Bytes, Bytes>> loan_slot_range;
  if (pool.loan()) loan_slot_range = std::pair{loan_slot, loan_slot + arena.chunk()};
  if (const std::optional<Bytes> slot =
          rogues.clear_chunk(need, arena.chunk(), arena.reserved(), loan_slot_range)) {
    return WindowPlace{.window = *slot, .slot = *slot, .lent = false};
  }
  return std::nullopt;
}

// Puts the window and the loan at `to`; maps nothing (the caller's remap does). A loan not taken
// stays where it is (a rogue may live in its chunk); drop_unused_loan() ends it once unmapped.
void Compiler::Impl::take_place(const WindowPlace& to) {
  if (to.lent) {
    if (pool.loan() && loan_slot != to.slot) arena.raw().end_borrow(to_size(loan_slot));
    const arena::PersistentPool::Loan loan = pool.lend(to_size(to.window - to.slot));
    if (!arena.raw().borrows(to_size(to.slot))) arena.raw().borrow(to_size(to.slot), loan.chunk);
    loan_slot = to.slot;
  }
  rogues.set_window(to.window, false);
  plans_have_holes = false;  // what is mapped now is the caller's choice
}

// With nothing of the arena live: home for plans of `need` bytes (the loan at slot 0, or 0).
// Maps nothing; returns whether the window (or the loan) moved.
bool Compiler::Impl::move_home(Bytes need) {
  home_stale = false;
  // The learned sites' room that the pool has free is held while the loan is chosen, so the
  // loan never takes the room a replayed step's pool allocation needs (guarantee 2: no backend
  // call then). Room the pool does not have (trim() gave it back) it maps when asked, as before.
  HeldRoom room(pool);
  hold_learned_room(room, /*grow=*/false);
  const std::optional<WindowPlace> to = clear_place(need);  // no rogue: slot 0
  if (!to) return false;  // the plans exceed the reservation: mapping them names that
  const Bytes from = rogues.window();
  const bool lent_at_home = pool.loan() && loan_slot == 0;
  if (to->window == from && to->lent == lent_at_home) return false;
  if (!to->lent) end_loan();
  take_place(*to);
  ++stats.window_moves;
  logger().info("plans moved home from arena offset {} to {}{}", from, to->window,
                to->lent ? fmt::format(" (bytes [{}, {}) of the pool's chunk at offset {})",
                                       to->window, arena.chunk(), pool.loan()->chunk_offset)
                         : std::string());
  return true;
}

// Home, with [window, window + extent) mapped (on the chunks the old window leaves, where it can)
// and nothing else: the caller has made sure nothing of the arena is live. When the memory for
// home is not there (the loan's chunk or a plan's could not be mapped), every chunk goes and the
// loan ends, so no chunk outlives the plans it held; the next step maps its plan where the window
// is, a step never seen tries home again, and the error goes on to the caller.
void Compiler::Impl::go_home(Bytes need, Bytes extent) {
  try {
    if (move_home(need)) {
      const arena::ByteRange keep = PlannedArena::range(rogues.window(), extent);
      arena.raw().remap({&keep, 1});
      return;
    }
  } catch (const Error&) {
    arena.raw().keep_only(live_ranges());  // nothing is live: every chunk
    end_loan();
    home_stale = true;
    throw;
  }
  arena.ensure_mapped(rogues.window(), extent);  // a failure leaves the arena as it was
}

// Home, with nothing of the arena live (the caller's check), the plans mapped there if they are
// mapped throughout now (on the chunks they leave), else nothing mapped: the next step maps them.
void Compiler::Impl::go_home_as_mapped() {
  const Bytes need = plans_bytes();
  go_home(need, arena.raw().mapped_throughout(to_size(rogues.window()), to_size(need)) ? need : 0);
}

// At the begin_step of a step never seen (it records, so backend calls are expected), before it
// maps anything: home, if the last rogue died or a loan ended since the window last went home.
void Compiler::Impl::go_home_if_stale() {
  if (!share_pool_chunk || !home_stale || !arena_empty()) return;
  try {
    go_home_as_mapped();
  } catch (const std::exception& e) {
    // The recording maps what it needs where the window is; a failure shows there.
    logger().warn("moving the plans home failed: {}", e.what());
  }
}

// Compiler::settle(): home now, between steps, if nothing of the arena is live. A recording's
// moves place the window while the step's outputs still live (and the pool keeps growing while a
// program warms up); the capture layer calls this when the pool holds what it will hold.
bool Compiler::Impl::settle_window() {
  if (!share_pool_chunk || !arena_empty()) return false;
  const std::uint64_t moves = stats.window_moves;
  go_home_as_mapped();
  drop_unused_loan();
  return stats.window_moves != moves;
}

void Compiler::Impl::end_loan() {
  if (!pool.loan()) return;
  arena.raw().end_borrow(to_size(loan_slot));
  pool.end_loan();
}

// After an unmapping: a loan whose slot no plan and no live buffer of the arena uses any more
// only keeps the pool from its own bytes (and from trimming the chunk). The window stays where it
// is (a start inside a chunk of the arena's own is as good as any); the next home re-lends.
void Compiler::Impl::drop_unused_loan() {
  if (pool.loan() && !arena.raw().is_mapped(to_size(loan_slot))) {
    end_loan();
    home_stale = true;
  }
}

}  // namespace memplan
