// Fuzz target: the CSV reader on arbitrary bytes. The first byte picks the options (fixed
// offsets; a 32-byte line limit so that short inputs reach it). The reader must either throw
// ParseError, with a short, printable message that names the source, or return a problem that
// check_problem accepts, with ids unique and one line number a buffer, in increasing order, and
// that reads back the same after write_csv.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "memplan/error.hpp"
#include "memplan/plan/csv.hpp"

namespace {

using namespace memplan;
using namespace memplan::plan;

[[noreturn]] void finding(std::string_view what) {
  std::fprintf(stderr, "fuzz_csv: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

void check_message(std::string_view message) {
  if (!message.starts_with("fuzz.csv:")) finding("a ParseError that does not name the source");
  if (message.size() > 400) finding("a ParseError message over 400 bytes");
  for (const char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte > 0x7e) finding("a ParseError message with an unprintable byte");
  }
}

bool same_buffer(const Buffer& a, const Buffer& b) {
  return a.id == b.id && a.lower == b.lower && a.upper == b.upper && a.size == b.size &&
         a.alignment == b.alignment && a.fixed_offset == b.fixed_offset;
}

void check_problem_read(const CsvProblem& read) {
  const std::vector<Buffer>& buffers = read.problem.buffers;
  try {
    check_problem(read.problem);
  } catch (const Error& e) {
    finding(std::string("a problem check_problem rejects: ") + e.what());
  }
  if (read.lines.size() != buffers.size()) finding("not one line number a buffer");
  for (std::size_t i = 1; i < read.lines.size(); ++i) {
    if (read.lines[i] <= read.lines[i - 1]) finding("line numbers not increasing");
  }
  std::set<std::string_view> ids;
  bool all_fixed = !buffers.empty();
  for (const Buffer& b : buffers) {
    if (b.id.empty() || !ids.insert(b.id).second) finding("an empty or repeated id");
    all_fixed = all_fixed && b.fixed_offset.has_value();
  }

  std::vector<Bytes> offsets;
  if (all_fixed) {
    for (const Buffer& b : buffers) offsets.push_back(*b.fixed_offset);
  }
  std::ostringstream out;
  write_csv(out, read.problem, offsets);
  std::istringstream again(out.str());
  Problem back;
  try {
    back = read_csv(again, "written.csv", {.offsets_are_fixed = all_fixed});
  } catch (const Error& e) {
    finding(std::string("write_csv output does not read back: ") + e.what());
  }
  if (back.buffers.size() != buffers.size()) finding("write_csv output reads back fewer rows");
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    Buffer expected = buffers[i];
    if (!all_fixed) expected.fixed_offset.reset();
    if (!same_buffer(back.buffers[i], expected)) finding("a row changed through write_csv");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  CsvReadOptions options;
  options.offsets_are_fixed = (data[0] & 1) != 0;
  if ((data[0] & 2) != 0) options.max_line_bytes = 32;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  try {
    check_problem_read(read_csv_with_lines(in, "fuzz.csv", options));
  } catch (const ParseError& e) {
    check_message(e.what());
  }
  return 0;
}
