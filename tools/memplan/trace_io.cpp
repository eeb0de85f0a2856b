// Reading and writing traces as CSV (the planner's reader and writer) or JSON (nlohmann::json,
// with positions recovered from the text so that every error points into the file).
#include "trace_io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "memplan/error.hpp"
#include "memplan/plan/json_trace.hpp"
#include "memplan/plan/problem.hpp"

namespace memplan::tool {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

struct Position {
  std::size_t line = 1;
  std::size_t column = 1;
};

Position position_of(std::string_view text, std::size_t byte) {
  Position at;
  for (std::size_t i = 0; i < std::min(byte, text.size()); ++i) {
    if (text[i] == '\n') {
      ++at.line;
      at.column = 1;
    } else {
      ++at.column;
    }
  }
  return at;
}

// Where each object of an array nested one level in the top-level object starts: the buffers of
// a trace, in order. A light scan (strings skipped) is enough: the parser has accepted the text.
std::vector<std::size_t> buffer_object_starts(std::string_view text) {
  std::vector<std::size_t> starts;
  std::vector<char> open;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (c == '{' && open.size() == 2 && open[0] == '{' && open[1] == '[') starts.push_back(i);
      open.push_back(c);
    } else if ((c == '}' || c == ']') && !open.empty()) {
      open.pop_back();
    }
  }
  return starts;
}

std::string read_text(const fs::path& path) {
  std::error_code ignored;
  if (fs::is_directory(path, ignored)) {
    throw ParseError(fmt::format("{}: is a directory, not a trace file", path.string()));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ParseError(
        fmt::format("{}: cannot open for reading ({})", path.string(), std::strerror(errno)));
  }
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool has_control(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
}

class JsonTraceReader {
 public:
  JsonTraceReader(const fs::path& path, const plan::CsvReadOptions& options)
      : path_(path.string()), options_(options), text_(read_text(path)) {}

  plan::CsvProblem read() {
    Json root;
    try {
      root = Json::parse(text_);
    } catch (const Json::parse_error& e) {
      const Position at = position_of(text_, e.byte == 0 ? 0 : e.byte - 1);
      // nlohmann's message starts "[json.exception.parse_error.101] parse error at line ...":
      // keep only what went wrong.
      std::string what = e.what();
      if (const auto colon = what.rfind(": "); colon != std::string::npos)
        what = what.substr(colon + 2);
      fail(at, fmt::format("not valid JSON: {}", what));
    }
    if (!root.is_object()) fail({}, "a trace is a JSON object with \"schema\" and \"buffers\"");
    check_schema(root);
    const auto buffers = root.find("buffers");
    if (buffers == root.end() || !buffers->is_array()) fail({}, "no \"buffers\" array");
    starts_ = buffer_object_starts(text_);
    plan::CsvProblem read;
    std::unordered_map<std::string, std::size_t> first_of_id;
    for (std::size_t i = 0; i < buffers->size(); ++i) {
      read_buffer((*buffers)[i], i, read);
      const auto [it, fresh] = first_of_id.emplace(read.problem.buffers.back().id, i);
      if (!fresh) {
        fail(at(i),
             fmt::format("id '{}' repeated (first at line {})", it->first, at(it->second).line));
      }
    }
    if (!read.offsets.empty() && read.offsets.size() != read.problem.buffers.size()) {
      fail({}, fmt::format("{} of {} buffers have an offset: give one to every buffer or to none",
                           read.offsets.size(), read.problem.buffers.size()));
    }
    if (std::all_of(read.tags.begin(), read.tags.end(), [](auto& t) { return t.empty(); }))
      read.tags.clear();
    try {
      plan::check_problem(read.problem);
    } catch (const InvalidArgument& e) {
      throw ParseError(fmt::format("{}: {}", path_, e.what()));
    }
    return read;
  }

 private:
  [[noreturn]] void fail(Position at, std::string_view what) const {
    throw ParseError(fmt::format("{}:{}:{}: {}", path_, at.line, at.column, what));
  }

  Position at(std::size_t buffer) const {
    return buffer < starts_.size() ? position_of(text_, starts_[buffer]) : Position{};
  }

  void check_schema(const Json& root) const {
    const auto schema = root.find("schema");
    const auto version = root.find("schema_version");
    if (schema == root.end() || *schema != "memplan.trace") {
      fail({}, fmt::format("not a memplan trace: \"schema\" is {}, expected \"memplan.trace\"",
                           schema == root.end() ? "missing" : schema->dump()));
    }
    if (version == root.end() || !version->is_number_integer() ||
        version->get<int>() != plan::kTraceSchemaVersion) {
      fail({}, fmt::format("trace schema_version {} is not supported; expected {}",
                           version == root.end() ? "missing" : version->dump(),
                           plan::kTraceSchemaVersion));
    }
  }

  void read_buffer(const Json& object, std::size_t i, plan::CsvProblem& read) {
    const Position where = at(i);
    if (!object.is_object()) fail(where, fmt::format("buffers[{}] is not an object", i));
    const auto integer = [&](std::string_view key, std::optional<Bytes> fallback) -> Bytes {
      const auto it = object.find(key);
      if (it == object.end()) {
        if (fallback) return *fallback;
        fail(where, fmt::format("buffers[{}] has no \"{}\"", i, key));
      }
      if (!it->is_number_integer()) {
        fail(where, fmt::format("buffers[{}].{} is {}, not an integer", i, key, it->dump()));
      }
      return it->get<Bytes>();
    };
    const auto text = [&](std::string_view key) -> std::optional<std::string> {
      const auto it = object.find(key);
      if (it == object.end()) return std::nullopt;
      if (!it->is_string()) fail(where, fmt::format("buffers[{}].{} is not a string", i, key));
      std::string value = it->get<std::string>();
      if (has_control(value)) {
        fail(where, fmt::format("buffers[{}].{} holds a control character", i, key));
      }
      return value;
    };
    for (const auto& [key, value] : object.items()) {
      static constexpr std::array<std::string_view, 7> kKeys{"id",        "lower",  "upper", "size",
                                                             "alignment", "offset", "tag"};
      if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
        fail(where, fmt::format("buffers[{}] has the unknown key \"{}\" (expected id, lower, "
                                "upper, size, alignment, offset, tag)",
                                i, key));
      }
    }
    plan::Buffer b;
    const auto id = text("id");
    if (!id || id->empty()) fail(where, fmt::format("buffers[{}] has no id", i));
    b.id = *id;
    b.lower = integer("lower", std::nullopt);
    b.upper = integer("upper", std::nullopt);
    b.size = integer("size", std::nullopt);
    b.alignment = integer("alignment", Bytes{1});
    if (object.contains("offset")) {
      read.offsets.push_back(integer("offset", std::nullopt));
      if (options_.offsets_are_fixed) b.fixed_offset = read.offsets.back();
    }
    read.tags.push_back(text("tag").value_or(""));
    try {
      plan::check_problem(plan::Problem{{b}});  // this buffer's own fields
    } catch (const InvalidArgument& e) {
      // "buffer 0 ('a'): size -1 ..." names the one-buffer problem's index: say which it is.
      std::string what = e.what();
      if (what.starts_with("buffer 0 ")) what = fmt::format("buffer {} {}", i, what.substr(9));
      fail(where, what);
    }
    read.problem.buffers.push_back(std::move(b));
    read.lines.push_back(where.line);
  }

  std::string path_;
  plan::CsvReadOptions options_;
  std::string text_;
  std::vector<std::size_t> starts_;
};

void refuse_snapshot(const fs::path& path) {
  if (path.extension() == ".pickle") {
    throw InvalidArgument(
        fmt::format("{}: a PyTorch memory snapshot; convert it with tools/torch_snapshot.py first",
                    path.string()));
  }
}

TraceFormat format_to_read(const fs::path& path) {
  refuse_snapshot(path);
  if (path.extension() == ".json") return TraceFormat::Json;
  if (path.extension() == ".csv") return TraceFormat::Csv;
  std::ifstream in(path, std::ios::binary);  // an unreadable file: the CSV reader names why
  char c = 0;
  while (in.get(c) && std::isspace(static_cast<unsigned char>(c))) {
  }
  return in && c == '{' ? TraceFormat::Json : TraceFormat::Csv;
}

}  // namespace

plan::CsvProblem read_trace(const fs::path& path, const plan::CsvReadOptions& options) {
  if (format_to_read(path) == TraceFormat::Json) return JsonTraceReader(path, options).read();
  return plan::read_csv_file_with_lines(path, options);
}

void write_trace(const fs::path& path, const plan::Problem& problem, std::span<const Bytes> offsets,
                 std::span<const std::string> tags) {
  if (!offsets.empty() && offsets.size() != problem.buffers.size()) {
    throw InvalidArgument(fmt::format("{}: {} offsets for {} buffers", path.string(),
                                      offsets.size(), problem.buffers.size()));
  }
  if (!tags.empty() && tags.size() != problem.buffers.size()) {
    throw InvalidArgument(fmt::format("{}: {} tags for {} buffers", path.string(), tags.size(),
                                      problem.buffers.size()));
  }
  refuse_snapshot(path);
  if (path.extension() != ".json") return plan::write_csv_file(path, problem, offsets, tags);
  plan::write_json_trace_file(path, problem, offsets, tags);
}

}  // namespace memplan::tool
