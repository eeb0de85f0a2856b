// Step scripts: compiler tests written as text, one operation a line, as issues report them.
//   step NAME          begin a step            end        end it
//   A ID BYTES TAG [P] [@ALIGN]  allocate (P: inside a pause; TAG "-" for none; @ALIGN: alignment)
//   F ID               free (inside or outside a step)
//   # ...              a comment
// The runner drives a harness (BasicHarness on any memory: pattern fill, overlap and content
// checks) and records, per step, the breaks and the backend's memory calls from begin_step
// to end_step included, whether it was served past the branch cap, and its path key.
#pragma once

#include <algorithm>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "step_program.hpp"

namespace memplan::testing {

// A step's path key: its own events in order. Allocations by size, alignment, tag and pause; frees
// of the step's own buffers by allocation index. Frees of older buffers are not events of the
// step tree and are left out. Two steps with one key follow one path of the allocation tree.
class PathKey {
 public:
  void allocate(int id, std::size_t size, std::size_t alignment, const std::string& tag,
                bool paused) {
    index_of_[id] = allocations_++;
    key_ << 'A' << size << ',' << alignment << ',' << tag << (paused ? ",P;" : ";");
  }
  void free(int id) {
    const auto it = index_of_.find(id);
    if (it != index_of_.end()) key_ << 'F' << it->second << ';';
  }
  std::string str() const { return key_.str(); }

 private:
  std::ostringstream key_;
  std::unordered_map<int, int> index_of_;
  int allocations_ = 0;
};

struct ScriptStep {
  std::uint64_t breaks = 0;
  std::uint64_t memory_calls = 0;
  bool past_cap = false;  // served dynamically, past the branch cap: not recorded
  std::string path;       // PathKey
  bool leaks = false;     // a buffer of the step is live at its end (the step pays for it there)
};

template <class H>
std::vector<ScriptStep> run_script(H& h, const std::string& script) {
  std::vector<ScriptStep> steps;
  std::istringstream lines(script);
  std::string line;
  std::uint64_t breaks_before = 0;
  std::uint64_t calls_before = 0;
  std::uint64_t dynamic_before = 0;
  PathKey path;
  std::vector<int> allocated;  // the running step's buffers
  int line_number = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    std::istringstream in(line);
    std::string op;
    if (!(in >> op) || op[0] == '#') continue;
    if (op == "step") {
      std::string name;
      in >> name;
      const Stats before = h.compiler().stats();
      breaks_before = before.breaks;
      dynamic_before = before.steps_dynamic;
      calls_before = h.backend().calls().memory_calls();
      path = PathKey();
      allocated.clear();
      h.compiler().begin_step(name);
    } else if (op == "end") {
      h.compiler().end_step();
      const Stats after = h.compiler().stats();
      steps.push_back(
          {after.breaks - breaks_before, h.backend().calls().memory_calls() - calls_before,
           after.steps_dynamic != dynamic_before, path.str(),
           std::any_of(allocated.begin(), allocated.end(), [&](int id) { return h.is_live(id); })});
    } else if (op == "A") {
      int id = 0;
      std::size_t bytes = 0;
      std::size_t alignment = 0;
      bool paused = false;
      std::string tag, flag;
      in >> id >> bytes >> tag;
      while (in >> flag) {
        if (flag == "P") paused = true;
        if (flag[0] == '@') alignment = std::stoull(flag.substr(1));
      }
      if (tag == "-") tag.clear();
      path.allocate(id, bytes, alignment, tag, paused);
      h.allocate(id, bytes, tag, paused, alignment);
      allocated.push_back(id);
    } else if (op == "F") {
      int id = 0;
      in >> id;
      path.free(id);
      h.release(id);
    } else {
      ADD_FAILURE() << "step script line " << line_number << ": unknown operation '" << op << "'";
    }
  }
  return steps;
}

// Steps of `steps` whose path an earlier step not past the branch cap had followed, and that broke
// or (leaking nothing) called the backend's memory: what guarantees 2 and 4 forbid.
inline std::vector<std::size_t> seen_path_failures(const std::vector<ScriptStep>& steps) {
  std::vector<std::size_t> failures;
  std::unordered_set<std::string> seen;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    if (seen.contains(steps[s].path) &&
        (steps[s].breaks > 0 || (steps[s].memory_calls > 0 && !steps[s].leaks))) {
      failures.push_back(s);
    }
    if (!steps[s].past_cap) seen.insert(steps[s].path);
  }
  return failures;
}

}  // namespace memplan::testing
