// The cursor's out-of-line moves: the replay's frees out of order, passing Free nodes, recording.
#include "step_cursor.hpp"

namespace memplan {

bool StepCursor::replayed_free(NodeId buffer, NodeId free) {
  step_->live[buffer] = nullptr;
  const auto was_late = std::find(late_.begin(), late_.end(), buffer);
  const bool freed_late = was_late != late_.end();  // its Free node is behind
  if (freed_late) late_.erase(was_late);
  if (free != tree::kNoNode) at_ = free;
  // Not a break. Freed early, its Free node is passed later.
  if (free == tree::kNoNode && !freed_late) freed_early_.push_back(buffer);
  ++events_;
  --live_;
  return free == tree::kNoNode;
}

// Whether planned node `n`'s range is clear of every buffer freed late (live, its Free node
// passed): those already passed, and `passed_late` on the way to `n`.
bool StepCursor::clear_of_late(const tree::Node& n, std::span<const NodeId> passed_late) const {
  const tree::AllocationTree& g = tree();
  const auto clear = [&](NodeId buffer) {
    const tree::Node& b = g.node(buffer);
    const Bytes at = n.offset_at(parity_);
    const Bytes b_at = b.offset_at(parity_);
    return b.persistent || b_at + b.key.size <= at || at + n.key.size <= b_at;
  };
  return std::all_of(late_.begin(), late_.end(), clear) &&
         std::all_of(passed_late.begin(), passed_late.end(), clear);
}

void StepCursor::pass_to(NodeId node) {
  tree::AllocationTree& g = tree();
  for (NodeId n = g.node(node).parent; n != at_; n = g.node(n).parent) {
    const NodeId buffer = g.node(n).buffer;
    if (step_->live[buffer] == nullptr) {
      std::erase(freed_early_, buffer);  // settled (a no-op for a late buffer freed since)
    } else {
      late_.push_back(buffer);
      // Served from the pool, it may outlive its Free node; from the plan it could not, so it
      // is never forgotten (a seen path would break on its range).
      if (g.node(buffer).persistent) g.node(buffer).pool_only = true;
    }
  }
  at_ = g.node(node).parent;
}

NodeId StepCursor::recorded_alloc(const tree::AllocKey& key, void* p) {
  NodeId node = tree::kNoNode;
  if (mode_ == StepMode::Record) {
    node = at_ = tree().add_alloc(at_, key);
    step_->live.push_back(p);
  }
  ++recorded_;
  ++events_;
  ++live_;
  return node;
}

void StepCursor::recorded_free(NodeId node) {
  if (node != tree::kNoNode) {
    step_->live[node] = nullptr;
    if (mode_ == StepMode::Record) {
      at_ = tree().add_free(at_, node);
      step_->live.push_back(nullptr);
    }
  }
  ++events_;
  --live_;
}

std::vector<NodeId> StepCursor::break_into(StepMode mode, BreakReason reason) {
  mode_ = mode;
  break_reason_ = reason;
  std::vector<NodeId> late;
  if (mode == StepMode::Record) {
    // The frees that came early happened before the break: they start the new branch, so that
    // its plan may reuse their bytes and the same program replays it (find_reachable passes them).
    for (const NodeId buffer : freed_early_) {
      at_ = tree().add_free(at_, buffer);
      step_->live.push_back(nullptr);
    }
    late.swap(late_);
  }
  freed_early_.clear();
  late_.clear();
  return late;
}

StepResult StepCursor::result() const noexcept {
  static constexpr StepKind kKinds[] = {StepKind::Replayed, StepKind::Recorded, StepKind::Dynamic};
  return StepResult{.kind = kKinds[static_cast<std::size_t>(mode_)],
                    .step = serial_,
                    .events = events_,
                    .recorded_allocations = recorded_,
                    .break_reason = break_reason_,
                    .parity = parity_};
}

}  // namespace memplan
