// The SVG picture: well-formed markup, one rectangle per buffer below the aggregation threshold,
// each with its description as a title; the lines and the legend; a bounded file past it.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "draw_test_support.hpp"
#include "memplan/draw/model.hpp"
#include "memplan/draw/picture.hpp"
#include "memplan/error.hpp"

namespace memplan::draw {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::Plan;

std::size_t count(const std::string& text, std::string_view what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// XML-ish: every element closed in order, attributes quoted, no bare '&' or '<' in text.
// Returns the first problem found, or "" when none.
std::string xml_problem(const std::string& text) {
  std::vector<std::string> open;
  std::size_t at = 0;
  while ((at = text.find('<', at)) != std::string::npos) {
    const std::size_t end = text.find('>', at);
    if (end == std::string::npos) return fmt::format("unclosed tag at {}", at);
    const std::string tag = text.substr(at + 1, end - at - 1);
    if (tag.empty()) return fmt::format("empty tag at {}", at);
    if (count(tag, "\"") % 2 != 0) return "unbalanced quotes in <" + tag + ">";
    if (tag.front() == '?') {
      // the XML declaration
    } else if (tag.front() == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return "</" + tag.substr(1) + "> unmatched";
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
    const std::size_t next = text.find('<', end);
    const std::string between =
        text.substr(end + 1, next == std::string::npos ? 0 : next - end - 1);
    for (std::size_t amp = between.find('&'); amp != std::string::npos;
         amp = between.find('&', amp + 1)) {
      if (between.find(';', amp) == std::string::npos) return "bare & in '" + between + "'";
    }
    at = end;
  }
  return open.empty() ? "" : "<" + open.back() + "> not closed";
}

Plan small_plan() {
  Plan p;
  p.add("weights <&> \"q\"", 0, 10, Bytes{1} << 30, 0);
  p.add("activations", 2, 6, Bytes{512} << 20, Bytes{1} << 30);
  p.add("scratch", 6, 9, Bytes{256} << 20, Bytes{1} << 30);
  p.add("never alive", 3, 3, 4096, 0);
  return p;
}

TEST(DrawSvg, OneTitledRectanglePerBufferAndWellFormed) {
  const Plan p = small_plan();
  const std::string svg =
      to_svg(p.problem, p.offsets, {.title = "three buffers", .lower_bound = Bytes{3} << 29});
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "<rect class=\"b\""), 3u);  // the never-alive buffer is not drawn
  EXPECT_EQ(count(svg, "<rect class=\"cell\""), 0u);
  EXPECT_THAT(svg, HasSubstr("<title>weights &lt;&amp;&gt; &quot;q&quot; · 1.00 GiB (1073741824 B) "
                             "· live [0, 10) · at [0 B, 1.00 GiB)</title>"));
  EXPECT_THAT(svg, HasSubstr(">three buffers</text>"));
  EXPECT_THAT(svg, HasSubstr(">lower bound 1.50 GiB</text>"));
  EXPECT_THAT(svg, HasSubstr(">arena 1.50 GiB</text>"));
  EXPECT_THAT(svg, HasSubstr(">peak 1.50 GiB at t=2</text>"));
  EXPECT_THAT(svg, HasSubstr("live at the peak (t=2): 1.50 GiB"));
  EXPECT_THAT(svg, HasSubstr(">1.00 GiB · 66.7%</text>"));
  EXPECT_THAT(svg, HasSubstr(">512 MiB · 33.3%</text>"));
  EXPECT_THAT(svg, Not(HasSubstr("<script")));
  EXPECT_THAT(svg, Not(HasSubstr("href")));
}

TEST(DrawSvg, TagsColourAndNameTheBuffers) {
  const Plan p = small_plan();
  const std::vector<std::string> tags{"model", "attention", "attention"};
  const std::vector<std::string> too_few(tags.begin(), tags.end());
  std::vector<std::string> four = tags;
  four.push_back("none");
  const std::string svg = to_svg(p.problem, p.offsets, {.tags = four});
  EXPECT_EQ(count(svg, "fill=\"" + to_hex(colour_for("attention")) + "\"><title>"), 2u);
  EXPECT_THAT(svg, HasSubstr("<title>activations · attention · 512 MiB"));
  EXPECT_THAT(svg, HasSubstr(" [model]</text>"));
  EXPECT_THROW((void)to_svg(p.problem, p.offsets, {.tags = too_few}), InvalidArgument);
}

TEST(DrawSvg, LegendListsTheLargestAndCountsTheRest) {
  Plan p;
  for (int i = 0; i < 20; ++i) p.add(fmt::format("b{}", i), 0, 4, 1000 + i, 1100 * i);
  const std::string svg = to_svg(p.problem, p.offsets, {});
  EXPECT_THAT(svg, HasSubstr(">b19</text>"));  // the largest comes first
  EXPECT_THAT(svg, HasSubstr(">b5</text>"));   // the 15th largest
  EXPECT_THAT(svg, Not(HasSubstr(">b4</text>")));
  EXPECT_THAT(svg, HasSubstr(">5 more: 4.89 KiB · 24.8%</text>"));
}

TEST(DrawSvg, AnEmptyPlanIsAnEmptyPicture) {
  const std::string svg = to_svg({}, {}, {.title = "nothing"});
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "<rect class=\"b\""), 0u);
  EXPECT_THAT(svg, HasSubstr(">arena 0 B</text>"));
}

// Past the threshold the file stays bounded: 100,000 buffers give far fewer rectangles.
TEST(DrawSvg, AHundredThousandBuffersStayBounded) {
  const Plan p = testing::lanes_plan(100'000, 64, 1 << 20, 3);
  const std::string svg = to_svg(p.problem, p.offsets, {});
  const std::size_t alone = count(svg, "<rect class=\"b\"");
  const std::size_t cells = count(svg, "<rect class=\"cell\"");
  EXPECT_GT(cells, 0u);
  EXPECT_LE(alone + cells, 940 * 580 / 64 + 119 * 74);
  EXPECT_LT(svg.size(), std::size_t{8} << 20);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_THAT(svg, HasSubstr("small buffers merged into"));
}

}  // namespace
}  // namespace memplan::draw
