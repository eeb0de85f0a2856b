// Step scripts: compiler tests written as text, one operation a line, as issues report them.
//   step NAME          begin a step            end        end it
//   A ID BYTES TAG [P] allocate (P: inside a pause; TAG "-" for none)
//   F ID               free (inside or outside a step)
//   # ...              a comment
// The runner drives a harness (BasicHarness on any memory) (pattern fill, overlap and content checks) and records, per step,
// the graph breaks and the backend's memory calls from begin_step to end_step included.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "step_program.hpp"

namespace memplan::testing {

struct ScriptStep {
  std::uint64_t breaks = 0;
  std::uint64_t memory_calls = 0;
};

template <class H>
std::vector<ScriptStep> run_script(H& h, const std::string& script) {
  std::vector<ScriptStep> steps;
  std::istringstream lines(script);
  std::string line;
  std::uint64_t breaks_before = 0;
  std::uint64_t calls_before = 0;
  int line_number = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    std::istringstream in(line);
    std::string op;
    if (!(in >> op) || op[0] == '#') continue;
    if (op == "step") {
      std::string name;
      in >> name;
      breaks_before = h.compiler().stats().graph_breaks;
      calls_before = h.backend().calls().memory_calls();
      h.compiler().begin_step(name);
    } else if (op == "end") {
      h.compiler().end_step();
      steps.push_back({h.compiler().stats().graph_breaks - breaks_before,
                       h.backend().calls().memory_calls() - calls_before});
    } else if (op == "A") {
      int id = 0;
      std::size_t bytes = 0;
      std::string tag, paused;
      in >> id >> bytes >> tag >> paused;
      h.allocate(id, bytes, tag == "-" ? std::string() : tag, paused == "P");
    } else if (op == "F") {
      int id = 0;
      in >> id;
      h.release(id);
    } else {
      ADD_FAILURE() << "step script line " << line_number << ": unknown operation '" << op << "'";
    }
  }
  return steps;
}

}  // namespace memplan::testing
