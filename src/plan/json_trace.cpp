// The JSON trace writer (the reader lives in the tool, on nlohmann::json).
#include "memplan/plan/json_trace.hpp"

#include <fmt/format.h>

#include <fstream>

#include "core/json_writer.hpp"
#include "memplan/error.hpp"

namespace memplan::plan {

std::string to_json_trace(const Problem& problem, std::span<const Bytes> offsets,
                          std::span<const std::string> tags) {
  if ((!offsets.empty() && offsets.size() != problem.buffers.size()) ||
      (!tags.empty() && tags.size() != problem.buffers.size())) {
    throw InvalidArgument(fmt::format("to_json_trace: {} buffers but {} offsets and {} tags",
                                      problem.buffers.size(), offsets.size(), tags.size()));
  }
  std::string out = fmt::format(
      R"({{"schema": "memplan.trace", "schema_version": {}, "buffers": [)", kTraceSchemaVersion);
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    out += i == 0 ? "\n  " : ",\n  ";
    detail::JsonWriter row(out);
    row.begin_object();
    row.field("id", b.id);
    row.field("lower", std::int64_t{b.lower});
    row.field("upper", std::int64_t{b.upper});
    row.field("size", std::int64_t{b.size});
    row.field("alignment", std::int64_t{b.alignment});
    if (!offsets.empty()) row.field("offset", std::int64_t{offsets[i]});
    if (!tags.empty() && !tags[i].empty()) row.field("tag", tags[i]);
    row.end_object();
  }
  out += "\n]}\n";
  return out;
}

void write_json_trace_file(const std::filesystem::path& path, const Problem& problem,
                           std::span<const Bytes> offsets, std::span<const std::string> tags) {
  const std::string text = to_json_trace(problem, offsets, tags);
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(fmt::format("{}: cannot open for writing", path.string()));
  out << text;
  if (!out.flush()) throw Error(fmt::format("{}: write failed", path.string()));
}

}  // namespace memplan::plan
