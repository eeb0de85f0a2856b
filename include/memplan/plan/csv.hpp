// The MiniMalloc CSV exchange format: a header, then one buffer a row,
//   id,lower,upper,size[,alignment][,offset][,tag]
// lifetimes half-open. Header names are matched case-insensitively, with the aliases
// start/begin for lower, end for upper and buffer for id; columns may come in any order.
// An `offset` column read from a file becomes each buffer's fixed_offset only when asked for
// (in published suites it is someone else's solution, not a constraint); the values are kept
// either way (CsvProblem::offsets), so a plan written by memplan can be read back and drawn. A
// `tag` column is memplan's side column: what allocated the buffer ("attention.scores"); the
// planner ignores it, pictures colour by it.
// The reader is safe on any bytes: a line is read only up to max_line_bytes, and a NUL byte
// ends the reading at once, so binary input (/dev/zero) fails in its first line.
#pragma once

#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/plan/problem.hpp"

namespace memplan::plan {

struct CsvReadOptions {
  bool offsets_are_fixed = false;          // treat an `offset` column as fixed offsets
  std::size_t max_line_bytes = 64 * 1024;  // a longer line is an error (a real row is < 200 B)
};

// Throws memplan::ParseError naming the source, line and column of the first problem: a value
// that is not a decimal 64-bit integer, a value check_problem rejects (at its cell), a field
// missing or extra, a repeated id, a NUL byte, a line over the limit, a read error; with fixed
// offsets, two rows whose offsets collide while both are alive; more bytes alive at once than
// kMaxArenaBytes. A problem it returns passes check_problem.
[[nodiscard]] Problem read_csv(std::istream& in, std::string_view source_name,
                               const CsvReadOptions& options = {});
[[nodiscard]] Problem read_csv_file(const std::filesystem::path& path,
                                    const CsvReadOptions& options = {});

// A problem with the line each buffer was read from, for messages that point into the file,
// and the side columns: empty when the file has no such column, else one per buffer.
struct CsvProblem {
  Problem problem;
  std::vector<std::size_t> lines;  // lines[i]: the 1-based line of problem.buffers[i]
  std::vector<Bytes> offsets;      // the offset column
  std::vector<std::string> tags;   // the tag column
};
[[nodiscard]] CsvProblem read_csv_with_lines(std::istream& in, std::string_view source_name,
                                             const CsvReadOptions& options = {});
[[nodiscard]] CsvProblem read_csv_file_with_lines(const std::filesystem::path& path,
                                                  const CsvReadOptions& options = {});

// Writes id,lower,upper,size,alignment[,offset][,tag]: offsets and tags may be empty (no such
// column), else one per buffer. Throws InvalidArgument for an id or tag CSV cannot hold back.
void write_csv(std::ostream& out, const Problem& problem, std::span<const Bytes> offsets = {},
               std::span<const std::string> tags = {});
void write_csv_file(const std::filesystem::path& path, const Problem& problem,
                    std::span<const Bytes> offsets = {}, std::span<const std::string> tags = {});

}  // namespace memplan::plan
