// MiniMalloc CSV reader and writer. The reader maps header names to fields once, then parses each
// row with std::from_chars; every error names source:line:column so a user can open the file at
// the spot. Rows are checked with check_problem as they are read, so a bad value is reported at
// its line rather than as a buffer index.
#include "memplan/plan/csv.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <fstream>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "memplan/error.hpp"

namespace memplan::plan {
namespace {

enum Field : int { kId, kLower, kUpper, kSize, kAlignment, kOffset, kFieldCount };

std::optional<Field> field_named(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (name == "id" || name == "buffer") return kId;
  if (name == "lower" || name == "start" || name == "begin") return kLower;
  if (name == "upper" || name == "end") return kUpper;
  if (name == "size") return kSize;
  if (name == "alignment" || name == "align") return kAlignment;
  if (name == "offset") return kOffset;
  return std::nullopt;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// One cell of a row: its text and the 1-based character column where it starts.
struct Cell {
  std::string_view text;
  std::size_t column;
};

std::vector<Cell> split(std::string_view line) {
  std::vector<Cell> cells;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    const std::string_view raw = line.substr(start, comma == std::string_view::npos
                                                        ? std::string_view::npos
                                                        : comma - start);
    const std::size_t first_char = raw.find_first_not_of(" \t");
    const std::size_t lead = first_char == std::string_view::npos ? 0 : first_char;
    cells.push_back({trim(raw), start + lead + 1});
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return cells;
}

class Reader {
 public:
  Reader(std::string_view source, const CsvReadOptions& options)
      : source_(source), options_(options) {}

  Problem read(std::istream& in) {
    Problem problem;
    std::string line;
    while (std::getline(in, line)) {
      ++line_no_;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const std::string_view text = trim(line);
      if (text.empty() || text.front() == '#') continue;
      if (!have_header_) {
        read_header(line);
      } else {
        problem.buffers.push_back(read_row(line));
      }
    }
    if (in.bad()) fail(line_no_, 1, "read error");
    if (!have_header_) fail(line_no_, 1, "no header line (expected id,lower,upper,size)");
    return problem;
  }

 private:
  [[noreturn]] void fail(std::size_t line, std::size_t column, std::string_view what) const {
    throw ParseError(fmt::format("{}:{}:{}: {}", source_, line, column, what));
  }

  void read_header(std::string_view line) {
    columns_.clear();
    std::array<bool, kFieldCount> seen{};
    for (const Cell& cell : split(line)) {
      const auto field = field_named(std::string(cell.text));
      if (!field) {
        fail(line_no_, cell.column,
             fmt::format("unknown column '{}' (expected id, lower, upper, size, alignment, "
                         "offset, or the aliases buffer, start, begin, end)",
                         cell.text));
      }
      if (seen[*field]) fail(line_no_, cell.column, fmt::format("column '{}' repeated", cell.text));
      seen[*field] = true;
      columns_.push_back(*field);
    }
    for (Field required : {kId, kLower, kUpper, kSize}) {
      if (!seen[required]) {
        static constexpr std::array<const char*, 4> kNames{"id", "lower", "upper", "size"};
        fail(line_no_, 1, fmt::format("header has no '{}' column", kNames[required]));
      }
    }
    have_header_ = true;
  }

  Bytes integer(const Cell& cell, std::string_view name) const {
    Bytes value = 0;
    const char* first = cell.text.data();
    const char* last = first + cell.text.size();
    const auto [end, error] = std::from_chars(first, last, value);
    if (cell.text.empty() || error != std::errc{} || end != last) {
      fail(line_no_, cell.column,
           fmt::format("{} '{}' is not an integer{}", name, cell.text,
                       error == std::errc::result_out_of_range ? " in range" : ""));
    }
    return value;
  }

  Buffer read_row(std::string_view line) const {
    const std::vector<Cell> cells = split(line);
    if (cells.size() != columns_.size()) {
      fail(line_no_, 1,
           fmt::format("{} fields, the header has {}", cells.size(), columns_.size()));
    }
    Buffer b;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const Cell& cell = cells[c];
      switch (columns_[c]) {
        case kId:
          if (cell.text.empty()) fail(line_no_, cell.column, "empty id");
          b.id = std::string(cell.text);
          break;
        case kLower: b.lower = integer(cell, "lower"); break;
        case kUpper: b.upper = integer(cell, "upper"); break;
        case kSize: b.size = integer(cell, "size"); break;
        case kAlignment: b.alignment = integer(cell, "alignment"); break;
        case kOffset:
          if (options_.offsets_are_fixed) b.fixed_offset = integer(cell, "offset");
          else (void)integer(cell, "offset");
          break;
        default: break;
      }
    }
    try {
      check_problem(Problem{{b}});
    } catch (const InvalidArgument& e) {
      // The message starts with "buffer 0 (id ...)": replace the index with the line.
      std::string what = e.what();
      const std::size_t colon = what.find("): ");
      fail(line_no_, 1, colon == std::string::npos ? what : what.substr(colon + 3));
    }
    return b;
  }

  std::string_view source_;
  CsvReadOptions options_;
  std::vector<Field> columns_;
  bool have_header_ = false;
  std::size_t line_no_ = 0;
};

}  // namespace

Problem read_csv(std::istream& in, std::string_view source_name, const CsvReadOptions& options) {
  return Reader(source_name, options).read(in);
}

Problem read_csv_file(const std::filesystem::path& path, const CsvReadOptions& options) {
  std::ifstream in(path);
  if (!in) throw ParseError(fmt::format("{}: cannot open for reading", path.string()));
  return read_csv(in, path.string(), options);
}

void write_csv(std::ostream& out, const Problem& problem, std::span<const Bytes> offsets) {
  if (!offsets.empty() && offsets.size() != problem.buffers.size()) {
    throw InvalidArgument(fmt::format("write_csv: {} offsets for {} buffers", offsets.size(),
                                      problem.buffers.size()));
  }
  out << (offsets.empty() ? "id,lower,upper,size,alignment\n"
                          : "id,lower,upper,size,alignment,offset\n");
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    out << fmt::format("{},{},{},{},{}", b.id, b.lower, b.upper, b.size, b.alignment);
    if (!offsets.empty()) out << ',' << offsets[i];
    out << '\n';
  }
}

void write_csv_file(const std::filesystem::path& path, const Problem& problem,
                    std::span<const Bytes> offsets) {
  std::ofstream out(path);
  if (!out) throw Error(fmt::format("{}: cannot open for writing", path.string()));
  write_csv(out, problem, offsets);
  if (!out.flush()) throw Error(fmt::format("{}: write failed", path.string()));
}

}  // namespace memplan::plan
