// Traces on disk, as the tool reads and writes them: MiniMalloc CSV (with memplan's side columns
// `offset` and `tag`) or memplan's JSON trace, chosen by the file's extension.
//
// The JSON trace (memplan/plan/json_trace.hpp writes it): alignment, offset and tag optional when
// read. Every error names file:line:column (of the buffer's object for a bad value).
#pragma once

#include <filesystem>
#include <span>
#include <string>

#include "memplan/plan/csv.hpp"

namespace memplan::tool {

enum class TraceFormat { Csv, Json };

// Reading: .json is JSON, .csv is CSV, anything else by its first byte that is not white space
// ('{': JSON). Writing: .json is JSON, anything else CSV. A .pickle (a PyTorch snapshot) is a
// memplan::InvalidArgument that points to tools/torch_snapshot.py.

// A trace with its side columns (see plan::CsvProblem); with offsets_are_fixed, the offsets become
// the buffers' fixed offsets (as `memplan plan --fixed-offsets` wants). Throws memplan::ParseError.
[[nodiscard]] plan::CsvProblem read_trace(const std::filesystem::path& path,
                                          const plan::CsvReadOptions& options = {});

// offsets and tags may be empty (none written), else one per buffer.
void write_trace(const std::filesystem::path& path, const plan::Problem& problem,
                 std::span<const Bytes> offsets = {}, std::span<const std::string> tags = {});

}  // namespace memplan::tool
