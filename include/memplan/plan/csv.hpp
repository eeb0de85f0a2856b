// The MiniMalloc CSV exchange format: a header, then one buffer a row,
//   id,lower,upper,size[,alignment][,offset]
// lifetimes half-open. Header names are matched case-insensitively, with the aliases
// start/begin for lower, end for upper and buffer for id; columns may come in any order.
// An `offset` column read from a file becomes each buffer's fixed_offset only when asked for
// (in published suites it is someone else's solution, not a constraint).
#pragma once

#include <filesystem>
#include <iosfwd>
#include <span>
#include <string_view>

#include "memplan/plan/problem.hpp"

namespace memplan::plan {

struct CsvReadOptions {
  bool offsets_are_fixed = false;  // treat an `offset` column as fixed offsets
};

// Throws memplan::ParseError naming the source, line and column of the first problem.
[[nodiscard]] Problem read_csv(std::istream& in, std::string_view source_name,
                               const CsvReadOptions& options = {});
[[nodiscard]] Problem read_csv_file(const std::filesystem::path& path,
                                    const CsvReadOptions& options = {});

// Writes id,lower,upper,size,alignment,offset; offsets may be empty (no offset column).
void write_csv(std::ostream& out, const Problem& problem, std::span<const Bytes> offsets = {});
void write_csv_file(const std::filesystem::path& path, const Problem& problem,
                    std::span<const Bytes> offsets = {});

}  // namespace memplan::plan
