// The recording's bookkeeping of live buffers and free ranges.
#include "recording.hpp"

namespace memplan {

void Recording::start(Bytes capacity, tree::NodeId first_recorded) {
  free_ranges_.emplace(capacity);
  live_.clear();
  first_recorded_ = first_recorded;
}

void Recording::finish() noexcept {
  freed_late_.clear();
  free_ranges_.reset();
  if (!live_.empty()) live_.clear();  // clear() sweeps every bucket, even when empty
  first_recorded_ = tree::kNoNode;
}

void Recording::hold(void* p, const Instance& instance) {
  free_ranges_->occupy(instance.offset, instance.size);
  live_.emplace(p, instance);
}

Instance Recording::release(void* p) {
  const auto it = live_.find(p);
  const Instance instance = it->second;
  free_ranges_->release(instance.offset, instance.size);
  live_.erase(it);
  return instance;
}

void Recording::add_freed_late(const tree::AllocationTree& tree,
                               const std::vector<tree::NodeId>& late) {
  // Buffers freed late are live, so the recording keeps their bytes and records their frees
  // again; the plan must know that they outlive the Free nodes the replay passed.
  for (const tree::NodeId buffer : late) {
    if (!tree.node(buffer).persistent) freed_late_.push_back(buffer);  // pool: no bytes here
  }
}

}  // namespace memplan
