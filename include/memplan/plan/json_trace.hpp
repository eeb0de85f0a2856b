// A planner problem written as memplan's JSON trace, the CSV's twin for tools that read JSON:
// {"schema": "memplan.trace", "schema_version": 1, "buffers": [{"id": "a", "lower": 0, "upper": 4,
// "size": 64, "alignment": 256, "offset": 0, "tag": "attention.q"}, ...]}, one buffer a line
// (diffable). offset and tag are optional (an offset on every buffer or on none); sizes are exact
// bytes. The memplan tool reads it back (tools/memplan/trace_io.hpp), naming file:line:column of
// any error; docs/file-formats.md describes it.
#pragma once

#include <filesystem>
#include <span>
#include <string>

#include "memplan/plan/problem.hpp"

namespace memplan::plan {

inline constexpr int kTraceSchemaVersion = 1;

// offsets and tags may be empty (none written), else one per buffer; an empty tag is not written.
[[nodiscard]] std::string to_json_trace(const Problem& problem, std::span<const Bytes> offsets = {},
                                        std::span<const std::string> tags = {});
void write_json_trace_file(const std::filesystem::path& path, const Problem& problem,
                           std::span<const Bytes> offsets = {},
                           std::span<const std::string> tags = {});

}  // namespace memplan::plan
