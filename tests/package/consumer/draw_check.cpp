// The installed draw component links on its own (with plan and core): a picture of one buffer.
#include <string>
#include <vector>

#include "memplan/draw/picture.hpp"

int main() {
  memplan::plan::Problem problem;
  problem.buffers.push_back({.id = "a", .lower = 0, .upper = 1, .size = 64});
  const std::vector<memplan::Bytes> offsets{0};
  return memplan::draw::to_svg(problem, offsets).find("<svg") == std::string::npos ? 1 : 0;
}
