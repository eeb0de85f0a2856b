// The running step's place in its allocation tree, and its books: the node of its last event, how
// many events it had and how many of its buffers are live, the frees the replay has not settled
// (early or late), and what StepResult reports. Every event of a step moves the cursor through one
// of the methods below, on the fast path, the full replay and the recording alike, so the books
// are kept in one place. Which event comes and where its bytes go is the coordinator's
// (Compiler::Impl); the cursor only follows.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "memplan/runtime/step_result.hpp"
#include "memplan/tree/allocation_tree.hpp"

namespace memplan {

using tree::NodeId;

// One allocation tree per step name, with the pointer each node's buffer has while it is live in
// the running step (indexed by node id; nullptr when not live).
struct StepTree {
  std::string name;
  tree::AllocationTree tree;
  std::vector<void*> live{nullptr};
  std::uint64_t steps = 0;
  // The period-two output of the tree's only branch (kNoNode: none), and the event until which
  // its plans hold the previous output (period_two_planner.hpp). Refused: it fell back to the
  // pool once (the caller broke the habit), and is never planned so again.
  NodeId period_two = tree::kNoNode;
  std::uint32_t period_two_hold = 0;
  bool period_two_refused = false;
};

// How the running step is served.
enum class StepMode : std::uint8_t {
  Replay,   // following a known branch: base + offset
  Record,   // after a break, or the first time: best fit, events appended to the tree
  Dynamic,  // past the branch cap: best fit, nothing learned
};

class StepCursor {
 public:
  // Starts step `serial()` of `step` on the calling thread, at the root, served by the plans of
  // `parity` (1 only for a tree with a period-two output: the other plan of its branch).
  void start(StepTree& step, StepMode mode, std::uint8_t parity = 0) noexcept {
    step_ = &step;
    parity_ = parity;
    thread_ = std::this_thread::get_id();
    mode_ = mode;
    at_ = tree::AllocationTree::root();
    events_ = 0;
    recorded_ = 0;
    break_reason_.reset();
  }
  // Between steps again; the next step gets the next serial number.
  void finish() noexcept {
    step_ = nullptr;
    at_ = tree::AllocationTree::root();
    freed_early_.clear();
    late_.clear();
    if (!pooled_.empty()) pooled_.clear();  // clear() sweeps every bucket, even when empty
    live_ = 0;
    ++serial_;
  }

  [[nodiscard]] bool running() const noexcept { return step_ != nullptr; }
  [[nodiscard]] StepTree& step() const noexcept { return *step_; }
  [[nodiscard]] tree::AllocationTree& tree() const noexcept { return step_->tree; }
  [[nodiscard]] StepMode mode() const noexcept { return mode_; }
  [[nodiscard]] std::uint8_t parity() const noexcept { return parity_; }
  [[nodiscard]] bool replaying() const noexcept { return mode_ == StepMode::Replay; }
  // Only the step's own thread makes its events; other threads are served by the pool.
  [[nodiscard]] bool on_step_thread() const noexcept {
    return std::this_thread::get_id() == thread_;
  }
  [[nodiscard]] NodeId at() const noexcept { return at_; }
  // The oldest event the path has next: the one the fast paths try.
  [[nodiscard]] NodeId next() const noexcept { return tree().node(at_).first_child; }
  [[nodiscard]] std::uint64_t serial() const noexcept { return serial_; }
  [[nodiscard]] std::uint64_t events() const noexcept { return events_; }
  [[nodiscard]] std::size_t live_buffers() const noexcept { return live_; }
  [[nodiscard]] void* live(NodeId node) const noexcept { return step_->live[node]; }
  // Replayed buffers still live whose Free node the path passed (freed later than on record).
  [[nodiscard]] std::span<const NodeId> late() const noexcept { return late_; }
  [[nodiscard]] bool none_late() const noexcept { return late_.empty(); }

  // Replay: the path goes on at Alloc node `node`, whose buffer is `p`.
  void replayed_alloc(NodeId node, void* p) noexcept {
    step_->live[node] = p;
    at_ = node;
    ++events_;
    ++live_;
  }
  // Replay: the path goes on at Free node `free`, the next one, which frees `buffer`.
  void replayed_next_free(NodeId free, NodeId buffer) noexcept {
    step_->live[buffer] = nullptr;
    at_ = free;
    ++events_;
    --live_;
  }
  // Replay: `buffer` is freed, at `free` when that is the next node, else out of order (kNoNode):
  // early, so its Free node is passed later, or late, its Free node behind. True: out of order.
  bool replayed_free(NodeId buffer, NodeId free);
  // Moves to just before `node`, a result of find_reachable: of the Free nodes passed on the
  // way, those of buffers freed early are settled, the others' buffers are freed late.
  void pass_to(NodeId node);
  template <class Accept>
  [[nodiscard]] NodeId find_reachable(Accept&& accept) const;
  [[nodiscard]] bool clear_of_late(const tree::Node& n, std::span<const NodeId> passed_late) const;

  // Recording (or dynamic): an allocation served best fit. Recording appends its Alloc node and
  // returns it; dynamic mode learns nothing and returns kNoNode.
  NodeId recorded_alloc(const tree::AllocKey& key, void* p);
  // Recording (or dynamic): the buffer of `node` (kNoNode: none learned) is freed.
  void recorded_free(NodeId node);

  // A break: the step goes on in `mode` (Record or Dynamic). Recording, the frees that came early
  // start the new branch; returns the buffers freed late (live, their Free nodes passed).
  std::vector<NodeId> break_into(StepMode mode, BreakReason reason);

  // Learned-site buffers of the step live in the pool, by pointer (their Alloc node).
  [[nodiscard]] std::unordered_map<void*, NodeId>& pooled() noexcept { return pooled_; }
  [[nodiscard]] const std::unordered_map<void*, NodeId>& pooled() const noexcept { return pooled_; }
  // The step's end took its live buffers (rogues, pool): nothing of it is live any more.
  void forget_live() noexcept { live_ = 0; }

  // What the step did so far (end_step adds the branch and the rogues).
  [[nodiscard]] StepResult result() const noexcept;

 private:
  StepTree* step_ = nullptr;
  std::thread::id thread_;
  StepMode mode_ = StepMode::Replay;
  std::uint8_t parity_ = 0;
  NodeId at_ = tree::AllocationTree::root();
  std::uint64_t serial_ = 0;
  std::uint64_t events_ = 0;
  std::size_t live_ = 0;  // buffers of the step not yet freed: rogues if any at its end
  std::uint64_t recorded_ = 0;
  std::optional<BreakReason> break_reason_;
  // Buffers of the replayed step freed before the path's Free node for them, in the order freed.
  // Those Free nodes are then passed whenever the next event lies beyond them, so frees match in
  // any order (find_reachable).
  std::vector<NodeId> freed_early_;
  // Buffers of the replayed step still live whose Free node the path has passed (freed later than
  // on record): a replayed allocation must be clear of them (clear_of_late).
  std::vector<NodeId> late_;
  std::unordered_map<void*, NodeId> pooled_;
};

// The oldest node (the smallest id) that `accept`s among the cursor's children and, through Free
// nodes, their children. A Free node is passed when its buffer is freed already (early: it is
// settled then), or when the buffer is still live (it is freed late: `accept` gets those passed
// on the way, so that an allocation is taken only if its planned range is clear of them). The
// oldest, because the tree only grows: a path that matched once matches the same nodes again,
// whatever branches were added since (guarantee 4). The first child is the oldest of all of them,
// which is why the inline fast path may take it.
template <class Accept>
NodeId StepCursor::find_reachable(Accept&& accept) const {
  const tree::AllocationTree& g = tree();
  NodeId best = tree::kNoNode;
  std::vector<NodeId> passed_late;
  const auto visit = [&](const auto& self, NodeId at) -> void {
    for (NodeId c = g.node(at).first_child; c != tree::kNoNode; c = g.node(c).next_sibling) {
      const tree::Node& n = g.node(c);
      if (accept(c, std::span<const NodeId>(passed_late))) {
        best = std::min(best, c);
      } else if (n.kind == tree::EventKind::Free) {
        if (step_->live[n.buffer] == nullptr) {
          self(self, c);  // freed already (early, or late after its first Free node): settled
        } else if (std::find(late_.begin(), late_.end(), n.buffer) == late_.end() &&
                   std::find(passed_late.begin(), passed_late.end(), n.buffer) ==
                       passed_late.end()) {
          passed_late.push_back(n.buffer);
          self(self, c);
          passed_late.pop_back();
        }
      }
    }
  };
  visit(visit, at_);
  return best;
}

}  // namespace memplan
