// Outputs carried from one step into the next: buffers of a period-two output site
// (tree::plan_period_two) still live after their step, left where the plan of their step's parity
// put them in the window. The next step of their tree runs the plan of the other parity, which
// holds that range until the event the caller's habit frees it at; past that event, while one is
// still live, each planned range is checked against it (clear()). Anything else that lets one
// live on (a second step before it is freed, another step name, a move of the window) turns it
// into a rogue first (Compiler::Impl::drop_carried), so no plan ever lands on one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "memplan/tree/allocation_tree.hpp"

namespace memplan {

struct StepTree;

struct CarriedOutput {
  StepTree* tree = nullptr;
  tree::NodeId node = tree::kNoNode;
  Bytes offset = 0;  // in the window
  Bytes size = 0;
  std::uint8_t parity = 0;  // of the step that made it
  std::uint64_t step = 0;   // that step's serial number
};

class CarriedOutputs {
 public:
  void add(void* p, const CarriedOutput& output) { live_.emplace_back(p, output); }
  std::optional<CarriedOutput> take(void* p) {
    const auto it = std::find_if(live_.begin(), live_.end(),
                                 [p](const auto& entry) { return entry.first == p; });
    if (it == live_.end()) return std::nullopt;
    const CarriedOutput output = it->second;
    live_.erase(it);
    return output;
  }
  [[nodiscard]] bool empty() const noexcept { return live_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return live_.size(); }
  [[nodiscard]] const std::vector<std::pair<void*, CarriedOutput>>& all() const noexcept {
    return live_;
  }
  // Whether [offset, offset + size) of the window holds no carried output's byte.
  [[nodiscard]] bool clear(Bytes offset, Bytes size) const noexcept {
    return std::none_of(live_.begin(), live_.end(), [&](const auto& entry) {
      const CarriedOutput& o = entry.second;
      return o.offset < offset + size && offset < o.offset + o.size;
    });
  }
  // Takes them all (to turn them into rogues).
  std::vector<std::pair<void*, CarriedOutput>> take_all() noexcept {
    return std::exchange(live_, {});
  }

 private:
  std::vector<std::pair<void*, CarriedOutput>> live_;  // at most two in the pattern
};

}  // namespace memplan
