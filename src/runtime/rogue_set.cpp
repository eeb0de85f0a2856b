// The rogue set's bookkeeping and the search for a window clear of it.
#include "rogue_set.hpp"

#include <algorithm>

namespace memplan {

void RogueSet::add(void* p, Rogue rogue) {
  occupied_.add(rogue.offset, rogue.size);
  rogues_.emplace(p, std::move(rogue));
}

std::optional<Rogue> RogueSet::take(void* p) {
  const auto it = rogues_.find(p);
  if (it == rogues_.end()) return std::nullopt;
  Rogue rogue = std::move(it->second);
  occupied_.remove(rogue.offset);
  rogues_.erase(it);
  return rogue;
}

std::optional<Bytes> RogueSet::clear_window(Bytes need, Bytes chunk, Bytes reserved) const {
  std::vector<std::pair<Bytes, Bytes>> held;  // the rogues' chunks: [start, end), ascending
  occupied_.for_each([&](Bytes offset, Bytes size) {
    const Bytes start = offset / chunk * chunk;
    const Bytes end = align_up(offset + size, chunk);
    if (!held.empty() && held.back().second >= start) {
      held.back().second = std::max(held.back().second, end);
    } else {
      held.emplace_back(start, end);
    }
  });
  const auto clear = [&](Bytes at) {
    return std::none_of(held.begin(), held.end(), [&](const auto& h) {
      return need > 0 && h.first < at + need && at < h.second;
    });
  };
  if (clear(window_)) return window_;
  std::optional<Bytes> to;
  if (clear(0)) to = 0;
  for (std::size_t i = 0; !to && i < held.size(); ++i) {
    if (clear(held[i].second)) to = held[i].second;
  }
  if (!to || *to + need > reserved) return std::nullopt;
  return to;
}

}  // namespace memplan
