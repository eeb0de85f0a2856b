// The HTML picture: self-contained (nothing fetched), the data embedded once per buffer and
// safe inside its <script>, and write_picture choosing the format by extension.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "draw_test_support.hpp"
#include "memplan/draw/picture.hpp"
#include "memplan/error.hpp"

namespace memplan::draw {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::Plan;

Plan two_buffers() {
  Plan p;
  p.add("</script><b>x", 0, 4, 4096, 0);
  p.add("second", 2, 6, 1 << 20, 4096);
  return p;
}

TEST(DrawHtml, SelfContainedWithTheDataEmbedded) {
  const Plan p = two_buffers();
  const std::vector<std::string> tags{"kv cache", "mlp"};
  const std::string html = to_html(p.problem, p.offsets, {.title = "two", .tags = tags});
  EXPECT_THAT(html, Not(HasSubstr("http:")));
  EXPECT_THAT(html, Not(HasSubstr("https:")));
  EXPECT_THAT(html, Not(HasSubstr(" src=")));
  EXPECT_THAT(html, Not(HasSubstr("@import")));
  EXPECT_THAT(html, Not(HasSubstr("</script><b>")));  // the id cannot end the data script
  EXPECT_THAT(html, HasSubstr("I:[\"\\u003c/script\\u003e\\u003cb\\u003ex\",\"second\"]"));
  EXPECT_THAT(html, HasSubstr("O:[0,4096]"));
  EXPECT_THAT(html, HasSubstr("tags:[\"kv cache\",\"mlp\"]"));
  EXPECT_THAT(html, HasSubstr("<title>two</title>"));
  EXPECT_THAT(html, HasSubstr("<canvas id=\"plot\">"));
  EXPECT_THAT(html, HasSubstr("Live at the peak (t=2): 1.00 MiB"));
  // The legend's rows name the buffer's place in the data, largest first: "second", then the other.
  const auto first_row = html.find("<div class=\"row\" data-k=\"1\">");
  const auto second_row = html.find("<div class=\"row\" data-k=\"0\">");
  ASSERT_NE(first_row, std::string::npos);
  EXPECT_LT(first_row, second_row);
}

// Times past a double's exact integers travel relative to the first instant, as a string.
TEST(DrawHtml, TimesAreRelativeToTheFirstInstant) {
  Plan p;
  p.add("a", 1'700'000'000'000'000'001, 1'700'000'000'000'000'004, 64, 0);
  p.add("b", 1'700'000'000'000'000'003, 1'700'000'000'000'000'009, 64, 64);
  const std::string html = to_html(p.problem, p.offsets, {});
  EXPECT_THAT(html, HasSubstr("tbase:\"1700000000000000001\",t0:0,t1:8,"));
  EXPECT_THAT(html, HasSubstr("peak:2,"));
  EXPECT_THAT(html, HasSubstr("L:[0,2]"));
  EXPECT_THAT(html, HasSubstr("U:[3,8]"));
}

TEST(DrawHtml, AHundredThousandBuffersTakeAboutFortyBytesEach) {
  const Plan p = testing::lanes_plan(100'000, 64, 1 << 20, 4);
  const std::string html = to_html(p.problem, p.offsets, {});
  EXPECT_LT(html.size(), std::size_t{100'000} * 60);
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(DrawFiles, TheExtensionChoosesTheFormat) {
  const Plan p = two_buffers();
  const auto dir =
      std::filesystem::temp_directory_path() /
      fmt::format("memplan_draw_{}", ::testing::UnitTest::GetInstance()->random_seed());
  std::filesystem::create_directories(dir);
  write_picture(dir / "plan.SVG", p.problem, p.offsets);
  write_picture(dir / "plan.html", p.problem, p.offsets);
  EXPECT_THAT(read(dir / "plan.SVG"), HasSubstr("<svg xmlns="));
  EXPECT_THAT(read(dir / "plan.html"), HasSubstr("<!DOCTYPE html>"));
  EXPECT_THAT([&] { write_picture(dir / "plan.png", p.problem, p.offsets); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("plan.png: cannot tell")));
  EXPECT_THAT(
      [&] { write_picture(dir / "missing" / "plan.svg", p.problem, p.offsets); },
      ::testing::ThrowsMessage<Error>(HasSubstr("missing/plan.svg: cannot open for writing")));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace memplan::draw
