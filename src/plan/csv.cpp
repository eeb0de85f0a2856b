// MiniMalloc CSV reader and writer. The reader maps header names to fields once, then parses each
// row with std::from_chars; every error names source:line:column so a user can open the file at
// the spot. Rows are checked with check_problem as they are read, and a value it rejects is
// reported at its own cell. The input is read a byte at a time up to the line limit, so no
// input, however long or binary, costs more than one line's worth of memory before its error.
#include "memplan/plan/csv.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <functional>
#include <ios>
#include <istream>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "memplan/error.hpp"
#include "memplan/plan/validator.hpp"

namespace memplan::plan {
namespace {

enum Field : int { kId, kLower, kUpper, kSize, kAlignment, kOffset, kTag, kFieldCount };
constexpr std::array<std::string_view, kFieldCount> kFieldNames{
    "id", "lower", "upper", "size", "alignment", "offset", "tag"};

std::optional<Field> field_named(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (name == "id" || name == "buffer") return kId;
  if (name == "lower" || name == "start" || name == "begin") return kLower;
  if (name == "upper" || name == "end") return kUpper;
  if (name == "size") return kSize;
  if (name == "alignment" || name == "align") return kAlignment;
  if (name == "offset") return kOffset;
  if (name == "tag") return kTag;
  return std::nullopt;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool is_control(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7f;
}

// A cell's text for a message: quoted, control and non-ASCII bytes as \xNN (a hostile file
// cannot write to the user's terminal), and cut at 40 characters as shown (so that a message
// naming two cells stays short, whatever bytes they hold).
std::string shown(std::string_view text) {
  constexpr std::size_t kShown = 40;
  std::string out = "'";
  std::size_t used = 0;
  for (; used < text.size() && out.size() <= kShown; ++used) {
    const auto byte = static_cast<unsigned char>(text[used]);
    if (is_control(text[used]) || byte > 0x7f)
      out += fmt::format("\\x{:02x}", byte);
    else
      out += text[used];
  }
  return out + (used < text.size() ? "...'" : "'");
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
    const std::string_view raw = line.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
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

  CsvProblem read(std::istream& in) {
    CsvProblem read;
    std::string line;
    while (next_line(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const std::string_view text = trim(line);
      if (text.empty() || text.front() == '#') continue;
      if (!have_header_) {
        read_header(line);
      } else {
        read.problem.buffers.push_back(read_row(line, read));
        read.lines.push_back(line_no_);
        id_columns_.push_back(id_column_);
      }
    }
    if (!has_offsets_) read.offsets.clear();
    if (!has_tags_) read.tags.clear();
    check_ids_unique(read);
    if (!have_header_) {
      fail(std::max<std::size_t>(line_no_, 1), 1, "no header line (expected id,lower,upper,size)");
    }
    check_whole_problem(read);
    return read;
  }

 private:
  [[noreturn]] void fail(std::size_t line, std::size_t column, std::string_view what) const {
    throw ParseError(fmt::format("{}:{}:{}: {}", source_, line, column, what));
  }

  // The next line, without its '\n', in `line`; false at the end of the input. Stops at the
  // first NUL byte and at the first byte past the limit, so binary or endless input fails early.
  bool next_line(std::istream& in, std::string& line) {
    line.clear();
    std::streambuf* bytes = in.rdbuf();
    if (bytes == nullptr) fail(line_no_ + 1, 1, "no input stream");
    ++line_no_;
    try {
      for (auto c = bytes->sbumpc(); c != std::char_traits<char>::eof(); c = bytes->sbumpc()) {
        if (c == '\n') return true;
        if (c == '\0') fail(line_no_, line.size() + 1, "NUL byte (this is not a text file)");
        if (line.size() == options_.max_line_bytes) {
          fail(line_no_, line.size() + 1,
               fmt::format("line longer than {} bytes, the limit (is this a CSV file?)",
                           options_.max_line_bytes));
        }
        line += static_cast<char>(c);
      }
    } catch (const std::ios_base::failure& e) {
      fail(line_no_, line.size() + 1, fmt::format("read error: {}", e.what()));
    }
    if (!line.empty()) return true;
    --line_no_;  // the end of the input is no line
    return false;
  }

  void read_header(std::string_view line) {
    columns_.clear();
    std::array<bool, kFieldCount> seen{};
    for (const Cell& cell : split(line)) {
      const auto field = field_named(std::string(cell.text));
      if (!field) {
        fail(line_no_, cell.column,
             fmt::format("unknown column {} (expected id, lower, upper, size, alignment, "
                         "offset, tag, or the aliases buffer, start, begin, end)",
                         shown(cell.text)));
      }
      if (seen[*field]) {
        fail(line_no_, cell.column, fmt::format("column {} repeated", shown(cell.text)));
      }
      seen[*field] = true;
      columns_.push_back(*field);
      has_offsets_ |= *field == kOffset;
      has_tags_ |= *field == kTag;
    }
    for (Field required : {kId, kLower, kUpper, kSize}) {
      if (!seen[required]) {
        fail(line_no_, 1, fmt::format("header has no '{}' column", kFieldNames[required]));
      }
    }
    have_header_ = true;
  }

  std::int64_t integer(const Cell& cell, Field field) const {
    const std::string_view name = kFieldNames[field];
    if (cell.text.empty()) fail(line_no_, cell.column, fmt::format("{} is empty", name));
    std::int64_t value = 0;
    const char* first = cell.text.data();
    const char* last = first + cell.text.size();
    const auto [end, error] = std::from_chars(first, last, value);
    if (error == std::errc::result_out_of_range && end == last) {
      fail(line_no_, cell.column,
           fmt::format("{} {} is outside the 64-bit range [{}, {}]", name, shown(cell.text),
                       std::numeric_limits<std::int64_t>::min(),
                       std::numeric_limits<std::int64_t>::max()));
    }
    if (error != std::errc{} || end != last) {
      fail(line_no_, cell.column, fmt::format("{} {} is not an integer", name, shown(cell.text)));
    }
    return value;
  }

  // Ids and tags are printed in messages and pictures: none may write to the user's terminal.
  std::string checked_text(const Cell& cell, std::string_view name) const {
    if (const auto control = std::find_if(cell.text.begin(), cell.text.end(), is_control);
        control != cell.text.end()) {
      fail(line_no_, cell.column + static_cast<std::size_t>(control - cell.text.begin()),
           fmt::format("{} {} holds a control character", name, shown(cell.text)));
    }
    return std::string(cell.text);
  }

  Buffer read_row(std::string_view line, CsvProblem& read) {
    const std::vector<Cell> cells = split(line);
    if (cells.size() < columns_.size()) {
      fail(line_no_, line.size() + 1,
           fmt::format("{} fields where the header has {}: no {}", cells.size(), columns_.size(),
                       kFieldNames[columns_[cells.size()]]));
    }
    if (cells.size() > columns_.size()) {
      fail(line_no_, cells[columns_.size()].column,
           fmt::format("{} fields where the header has {}", cells.size(), columns_.size()));
    }
    Buffer b;
    std::array<std::size_t, kFieldCount> column{};
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const Cell& cell = cells[c];
      const Field field = columns_[c];
      column[field] = cell.column;
      if (field == kId) id_column_ = cell.column;
      switch (field) {
        case kId:
          if (cell.text.empty()) fail(line_no_, cell.column, "empty id");
          if (cell.text.front() == '#') {
            fail(
                line_no_, cell.column,
                fmt::format("id {} starts with '#', which marks a comment line", shown(cell.text)));
          }
          b.id = checked_text(cell, "id");
          break;
        case kLower:
          b.lower = integer(cell, field);
          break;
        case kUpper:
          b.upper = integer(cell, field);
          break;
        case kSize:
          b.size = integer(cell, field);
          break;
        case kAlignment:
          b.alignment = integer(cell, field);
          break;
        case kOffset:
          read.offsets.push_back(integer(cell, field));
          if (options_.offsets_are_fixed) b.fixed_offset = read.offsets.back();
          break;
        case kTag:
          read.tags.push_back(checked_text(cell, "tag"));
          break;
        default:
          break;
      }
    }
    check_values(b, column);
    return b;
  }

  // check_problem on the row's buffer; what it rejects is reported at the cell it is about,
  // found by checking the fields one at a time on an otherwise blank buffer.
  void check_values(const Buffer& b, const std::array<std::size_t, kFieldCount>& column) const {
    const auto rejection = [](Buffer probe) -> std::optional<std::string> {
      try {
        check_problem(Problem{{std::move(probe)}});
      } catch (const InvalidArgument& e) {
        // The message starts "buffer 0 (id ''): " for a blank id: keep what follows.
        const std::string_view what = e.what();
        constexpr std::string_view kPrefix = "buffer 0 (id ''): ";
        return std::string(what.starts_with(kPrefix) ? what.substr(kPrefix.size()) : what);
      }
      return std::nullopt;
    };
    try {
      check_problem(Problem{{b}});
      return;
    } catch (const InvalidArgument&) {
    }
    Buffer row = b;
    row.id.clear();  // the message then starts with a known prefix
    const auto whole = rejection(row);
    const std::array<std::pair<Field, Buffer>, 4> probes{{
        {kSize, Buffer{.size = b.size}},
        {kAlignment, Buffer{.alignment = b.alignment}},
        {kUpper, Buffer{.lower = b.lower, .upper = b.upper}},
        {kOffset, Buffer{.alignment = b.alignment, .fixed_offset = b.fixed_offset}},
    }};
    for (const auto& [field, probe] : probes) {
      if (const auto what = rejection(probe)) fail(line_no_, column[field], *what);
    }
    fail(line_no_, 1, *whole);
  }

  // Ids name buffers in messages and in --out files: each may appear once. Checked once all
  // rows are read by sorting (hash, id, index) - a hash map of a million ids costs more than the
  // parse. A repeat is then next to the first row of its id; the one on the earliest line is
  // reported.
  void check_ids_unique(const CsvProblem& read) const {
    const std::vector<Buffer>& buffers = read.problem.buffers;
    std::vector<std::pair<std::size_t, std::size_t>> keys;  // (hash of id, index)
    keys.reserve(buffers.size());
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      keys.emplace_back(std::hash<std::string>{}(buffers[i].id), i);
    }
    std::sort(keys.begin(), keys.end(), [&](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first < b.first;
      const int order = buffers[a.second].id.compare(buffers[b.second].id);
      return order != 0 ? order < 0 : a.second < b.second;
    });
    std::optional<std::pair<std::size_t, std::size_t>> repeat;  // (first, again) indices
    std::size_t first = 0;                                      // the first row of this id
    for (std::size_t k = 0; k < keys.size(); ++k) {
      const std::size_t i = keys[k].second;
      if (k == 0 || keys[k - 1].first != keys[k].first ||
          buffers[keys[k - 1].second].id != buffers[i].id) {
        first = i;
      } else if (!repeat || i < repeat->second) {
        repeat = {first, i};
      }
    }
    if (repeat) {
      const auto [original, again] = *repeat;
      fail(read.lines[again], id_columns_[again],
           fmt::format("id {} repeated (first on line {})", shown(buffers[again].id),
                       read.lines[original]));
    }
  }

  // What no single row shows: fixed offsets that collide (reported at the later row, naming the
  // earlier) and more bytes alive at once than the largest arena. After this, check_problem
  // accepts the problem, so every planner error is about planning, not about the file.
  void check_whole_problem(const CsvProblem& read) const {
    const std::vector<Buffer>& buffers = read.problem.buffers;
    if (options_.offsets_are_fixed) {
      for (const Violation& v : find_fixed_offset_conflicts(read.problem, 1)) {
        const std::size_t first = std::min(v.buffer, v.other);
        const std::size_t second = std::max(v.buffer, v.other);
        const auto row = [&](std::size_t i) {
          const Buffer& b = buffers[i];
          return fmt::format("buffer {} (offset {}, size {}, lifetime [{}, {}))", shown(b.id),
                             b.fixed_offset.value_or(0), b.size, b.lower, b.upper);
        };
        fail(read.lines[second], 1,
             fmt::format("{} overlaps {} on line {}: no plan can keep both fixed offsets",
                         row(second), row(first), read.lines[first]));
      }
    }
    try {
      check_problem(read.problem);
    } catch (const InvalidArgument& e) {
      throw ParseError(fmt::format("{}: {}", source_, e.what()));
    }
  }

  std::string_view source_;
  CsvReadOptions options_;
  std::vector<Field> columns_;
  std::vector<std::size_t> id_columns_;  // per row: the column of its id, for repeats
  std::size_t id_column_ = 1;
  bool have_header_ = false;
  bool has_offsets_ = false;
  bool has_tags_ = false;
  std::size_t line_no_ = 0;
};

}  // namespace

Problem read_csv(std::istream& in, std::string_view source_name, const CsvReadOptions& options) {
  return read_csv_with_lines(in, source_name, options).problem;
}

Problem read_csv_file(const std::filesystem::path& path, const CsvReadOptions& options) {
  return read_csv_file_with_lines(path, options).problem;
}

CsvProblem read_csv_with_lines(std::istream& in, std::string_view source_name,
                               const CsvReadOptions& options) {
  return Reader(source_name, options).read(in);
}

CsvProblem read_csv_file_with_lines(const std::filesystem::path& path,
                                    const CsvReadOptions& options) {
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) {
    throw ParseError(fmt::format("{}: is a directory, not a CSV file", path.string()));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ParseError(
        fmt::format("{}: cannot open for reading ({})", path.string(), std::strerror(errno)));
  }
  return read_csv_with_lines(in, path.string(), options);
}

namespace {

// An id the reader gives back unchanged: not empty, no comma, no control character (line ends
// and NUL included), not starting with '#' (a comment line), no spaces around (trimmed).
bool id_reads_back(std::string_view id) {
  return !id.empty() && id.find(',') == std::string_view::npos &&
         std::none_of(id.begin(), id.end(), is_control) && id.front() != '#' && trim(id) == id;
}

}  // namespace

void write_csv(std::ostream& out, const Problem& problem, std::span<const Bytes> offsets,
               std::span<const std::string> tags) {
  if (!offsets.empty() && offsets.size() != problem.buffers.size()) {
    throw InvalidArgument(fmt::format("write_csv: {} offsets for {} buffers", offsets.size(),
                                      problem.buffers.size()));
  }
  if (!tags.empty() && tags.size() != problem.buffers.size()) {
    throw InvalidArgument(
        fmt::format("write_csv: {} tags for {} buffers", tags.size(), problem.buffers.size()));
  }
  for (std::size_t i = 0; i < tags.size(); ++i) {
    if (tags[i].find(',') != std::string::npos || trim(tags[i]) != tags[i] ||
        std::any_of(tags[i].begin(), tags[i].end(), is_control)) {
      throw InvalidArgument(fmt::format(
          "write_csv: buffer {} has the tag {}, which CSV cannot hold (a comma, a control "
          "character, or spaces around)",
          i, shown(tags[i])));
    }
  }
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    if (!id_reads_back(problem.buffers[i].id)) {
      throw InvalidArgument(fmt::format(
          "write_csv: buffer {} has the id {}, which CSV cannot hold (empty, a comma, a "
          "control character, '#' first, or spaces around)",
          i, shown(problem.buffers[i].id)));
    }
  }
  out << "id,lower,upper,size,alignment" << (offsets.empty() ? "" : ",offset")
      << (tags.empty() ? "" : ",tag") << '\n';
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    out << fmt::format("{},{},{},{},{}", b.id, b.lower, b.upper, b.size, b.alignment);
    if (!offsets.empty()) out << ',' << offsets[i];
    if (!tags.empty()) out << ',' << tags[i];
    out << '\n';
  }
}

void write_csv_file(const std::filesystem::path& path, const Problem& problem,
                    std::span<const Bytes> offsets, std::span<const std::string> tags) {
  std::ofstream out(path);
  if (!out) throw Error(fmt::format("{}: cannot open for writing", path.string()));
  write_csv(out, problem, offsets, tags);
  if (!out.flush()) throw Error(fmt::format("{}: write failed", path.string()));
}

}  // namespace memplan::plan
