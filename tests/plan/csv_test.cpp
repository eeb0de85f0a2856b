// The CSV reader takes the MiniMalloc format with its aliases, round-trips through the writer,
// and reports every malformed input with source, line and column.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "memplan/error.hpp"
#include "memplan/plan/csv.hpp"

namespace memplan::plan {
namespace {

Problem parse(const std::string& text, CsvReadOptions options = {}) {
  std::istringstream in(text);
  return read_csv(in, "test.csv", options);
}

std::string error_of(const std::string& text) {
  try {
    (void)parse(text);
  } catch (const ParseError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Csv, ReadsTheMiniMallocFormat) {
  const Problem p = parse("id,lower,upper,size\n0,0,3,16\n1,2,5,8\n");
  ASSERT_EQ(p.buffers.size(), 2u);
  EXPECT_EQ(p.buffers[1].id, "1");
  EXPECT_EQ(p.buffers[1].lower, 2);
  EXPECT_EQ(p.buffers[1].upper, 5);
  EXPECT_EQ(p.buffers[1].size, 8);
  EXPECT_EQ(p.buffers[1].alignment, 1);
  EXPECT_FALSE(p.buffers[1].fixed_offset);
}

TEST(Csv, AcceptsAliasesAnyOrderSpacesAndCrlf) {
  const Problem p = parse("# comment\r\nSize, End ,Start,Buffer,Alignment\r\n\r\n 64, 9, 1, x , 32\r\n");
  ASSERT_EQ(p.buffers.size(), 1u);
  EXPECT_EQ(p.buffers[0].id, "x");
  EXPECT_EQ(p.buffers[0].lower, 1);
  EXPECT_EQ(p.buffers[0].upper, 9);
  EXPECT_EQ(p.buffers[0].size, 64);
  EXPECT_EQ(p.buffers[0].alignment, 32);
}

TEST(Csv, OffsetColumnIsFixedOnlyWhenAsked) {
  const std::string text = "id,lower,upper,size,offset\na,0,1,4,12\n";
  EXPECT_FALSE(parse(text).buffers[0].fixed_offset);
  EXPECT_EQ(parse(text, {.offsets_are_fixed = true}).buffers[0].fixed_offset, 12);
}

TEST(Csv, RoundTripsThroughTheWriter) {
  const Problem p = parse("id,lower,upper,size,alignment\na,0,3,16,8\nb,1,2,1,1\n");
  std::ostringstream out;
  const std::vector<Bytes> offsets{0, 16};
  write_csv(out, p, offsets);
  const Problem q = parse(out.str(), {.offsets_are_fixed = true});
  ASSERT_EQ(q.buffers.size(), 2u);
  EXPECT_EQ(q.buffers[0].alignment, 8);
  EXPECT_EQ(q.buffers[1].fixed_offset, 16);
  EXPECT_THROW(write_csv(out, p, std::vector<Bytes>{1}), InvalidArgument);
}

TEST(Csv, NamesLineAndColumnOfEachError) {
  EXPECT_EQ(error_of(""), "test.csv:0:1: no header line (expected id,lower,upper,size)");
  EXPECT_EQ(error_of("id,lower,upper\n"), "test.csv:1:1: header has no 'size' column");
  EXPECT_EQ(error_of("id,lower,upper,size,colour\n"),
            "test.csv:1:21: unknown column 'colour' (expected id, lower, upper, size, "
            "alignment, offset, or the aliases buffer, start, begin, end)");
  EXPECT_EQ(error_of("id,lower,upper,size,size\n"), "test.csv:1:21: column 'size' repeated");
  EXPECT_EQ(error_of("id,lower,upper,size\n0,0,1,2\n1,0,x,2\n"),
            "test.csv:3:5: upper 'x' is not an integer");
  EXPECT_EQ(error_of("id,lower,upper,size\n0,0,1\n"), "test.csv:2:1: 3 fields, the header has 4");
  EXPECT_EQ(error_of("id,lower,upper,size\n0,0,1,99999999999999999999\n"),
            "test.csv:2:7: size '99999999999999999999' is not an integer in range");
  EXPECT_EQ(error_of("id,lower,upper,size\n0,5,1,2\n"),
            "test.csv:2:1: lifetime [5, 1) ends before it starts");
  EXPECT_EQ(error_of("id,lower,upper,size\n0,0,1,-2\n"),
            "test.csv:2:1: size -2 is outside [0, 4503599627370496]");
  EXPECT_EQ(error_of("id,lower,upper,size\n,0,1,2\n"), "test.csv:2:1: empty id");
}

TEST(Csv, MissingFileIsAParseError) {
  EXPECT_THROW((void)read_csv_file("/nonexistent/trace.csv"), ParseError);
}

TEST(Csv, ReadsEveryShippedTrace) {
  std::size_t files = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(MEMPLAN_TEST_DATA_DIR "/traces")) {
    if (entry.path().extension() != ".csv") continue;
    const Problem p = read_csv_file(entry.path());
    EXPECT_FALSE(p.buffers.empty()) << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 17u);
}

}  // namespace
}  // namespace memplan::plan
