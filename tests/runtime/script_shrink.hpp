// Shrinks a failing step script (step_script.hpp) to a small one that still fails, so that a
// randomized run's failure comes with a reproducer a person can read. Delta debugging (ddmin,
// complements only) over the script's steps, then over places (the k-th allocation of every
// step), then over buffers, repeated until none shrinks it. Dropping a step drops its own buffers
// (their allocations and frees, wherever they are) and keeps its frees of older buffers, now
// outside any step; dropping a buffer drops its allocation and its free.
#pragma once

#include <algorithm>
#include <functional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace memplan::testing {

namespace shrink_detail {

struct Line {
  std::string text;
  char op = 0;               // 's' step, 'e' end, 'A', 'F'
  int step = -1;             // the step block the line is in or ends (-1: outside any step)
  int buffer = -1;           // the buffer an A or F line names
  bool step_marker = false;  // a `step` or `end` line
};

inline std::vector<Line> parse(const std::string& script) {
  std::vector<Line> lines;
  std::istringstream in(script);
  std::string text;
  int steps = 0;
  int current = -1;
  while (std::getline(in, text)) {
    std::istringstream words(text);
    std::string op;
    if (!(words >> op) || op[0] == '#') continue;
    Line line{text, op == "step" ? 's' : op == "end" ? 'e' : op[0], current};
    if (op == "step") {
      current = steps++;
      line.step = current;
      line.step_marker = true;
    } else if (op == "end") {
      line.step_marker = true;
      current = -1;
    } else {
      words >> line.buffer;
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

// Keeps the lines whose unit (unit_of) is kept or is -1.
inline std::string build(const std::vector<Line>& lines, const std::vector<int>& unit_of,
                         const std::vector<bool>& kept) {
  std::string script;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (unit_of[i] >= 0 && !kept[unit_of[i]]) continue;
    script += lines[i].text;
    script += '\n';
  }
  return script;
}

// ddmin over `units` units of `lines`: the smallest set of kept units found for which `fails`
// holds of the built script.
inline std::string ddmin(const std::vector<Line>& lines, const std::vector<int>& unit_of, int units,
                         const std::function<bool(const std::string&)>& fails) {
  std::vector<int> alive;
  for (int u = 0; u < units; ++u) alive.push_back(u);
  const auto script_of = [&](const std::vector<int>& keep) {
    std::vector<bool> kept(units, false);
    for (const int u : keep) kept[u] = true;
    return build(lines, unit_of, kept);
  };
  std::size_t n = 2;
  while (alive.size() >= 2) {
    const std::size_t chunk = (alive.size() + n - 1) / n;
    bool reduced = false;
    for (std::size_t start = 0; start < alive.size(); start += chunk) {
      std::vector<int> complement(alive.begin(),
                                  alive.begin() + static_cast<std::ptrdiff_t>(start));
      complement.insert(
          complement.end(),
          alive.begin() + static_cast<std::ptrdiff_t>(std::min(start + chunk, alive.size())),
          alive.end());
      if (fails(script_of(complement))) {
        alive = std::move(complement);
        n = std::max<std::size_t>(n - 1, 2);
        reduced = true;
        break;
      }
    }
    if (!reduced) {
      if (n >= alive.size()) break;
      n = std::min(2 * n, alive.size());
    }
  }
  if (alive.size() == 1 && fails(script_of({}))) alive.clear();
  return script_of(alive);
}

}  // namespace shrink_detail

// `script` must fail (`fails(script)`); returns a script that still fails, usually far smaller.
inline std::string shrink_script(std::string script,
                                 const std::function<bool(const std::string&)>& fails) {
  using namespace shrink_detail;
  for (std::size_t before = script.size() + 1; script.size() < before;) {
    before = script.size();
    // Over steps: step markers and A lines belong to their step, F lines to their buffer's step.
    std::vector<Line> lines = parse(script);
    std::unordered_map<int, int> step_of_buffer;
    int steps = 0;
    for (const Line& l : lines) {
      if (l.op == 's') steps = l.step + 1;
      if (l.op == 'A') step_of_buffer[l.buffer] = l.step;
    }
    std::vector<int> unit_of;
    for (const Line& l : lines) {
      if (l.step_marker || l.op == 'A') {
        unit_of.push_back(l.step);
      } else {
        const auto it = step_of_buffer.find(l.buffer);
        unit_of.push_back(it == step_of_buffer.end() ? -1 : it->second);
      }
    }
    script = ddmin(lines, unit_of, steps, fails);

    // Over places: the k-th allocation of every step at once (and its free), so that steps that
    // share a path keep sharing it.
    lines = parse(script);
    std::unordered_map<int, int> place_of_buffer;
    std::vector<int> allocations_in_step(static_cast<std::size_t>(steps), 0);
    int places = 0;
    for (const Line& l : lines) {
      if (l.op != 'A' || l.step < 0) continue;
      place_of_buffer[l.buffer] = allocations_in_step[static_cast<std::size_t>(l.step)]++;
      places = std::max(places, place_of_buffer[l.buffer] + 1);
    }
    unit_of.clear();
    for (const Line& l : lines) {
      const auto it = place_of_buffer.find(l.buffer);
      unit_of.push_back(l.step_marker || it == place_of_buffer.end() ? -1 : it->second);
    }
    script = ddmin(lines, unit_of, places, fails);

    // Over buffers: A and F lines belong to their buffer.
    lines = parse(script);
    std::unordered_map<int, int> unit_of_buffer;
    unit_of.clear();
    for (const Line& l : lines) {
      if (l.step_marker || l.buffer < 0) {
        unit_of.push_back(-1);
        continue;
      }
      const auto [it, added] =
          unit_of_buffer.try_emplace(l.buffer, static_cast<int>(unit_of_buffer.size()));
      unit_of.push_back(it->second);
    }
    script = ddmin(lines, unit_of, static_cast<int>(unit_of_buffer.size()), fails);
  }
  return script;
}

}  // namespace memplan::testing
