// The HTML picture as a person sees it: headless Chromium renders it to a PNG, and the PNG must
// show the rectangles, in their colours and where the plan puts them (earlier buffers to the
// left, higher offsets higher up), not a blank page. tests/draw/png_colours.py reads the PNG
// with zlib alone. Skips when chromium or python3 is missing; every command runs under timeout.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "draw_test_support.hpp"
#include "memplan/draw/model.hpp"
#include "memplan/draw/picture.hpp"

namespace memplan::draw {
namespace {

std::string find_program(const std::string& name) {
  const std::string probe = "command -v " + name + " > /dev/null 2>&1";
  return std::system(probe.c_str()) == 0 ? name : "";
}

int run(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string tail(const std::filesystem::path& path) {
  const std::string text = read(path);
  return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
}

// Headless Chromium on `page` doing `action` (--screenshot=FILE, --dump-dom) in a 900 x 600
// window, under timeout; stdout to `out`, stderr to dir/chromium.log. The exit code (124: timed
// out).
int run_chromium(const std::string& chromium, const std::filesystem::path& dir,
                 const std::string& action, const std::filesystem::path& page,
                 const std::filesystem::path& out) {
  return run(fmt::format(
      "timeout -k 5 90 {} --headless --no-sandbox --disable-gpu --no-first-run "
      "--force-device-scale-factor=1 --user-data-dir={} --window-size=900,600 {} file://{} > {} "
      "2> {}",
      chromium, (dir / "profile").string(), action, page.string(), out.string(),
      (dir / "chromium.log").string()));
}

struct Found {
  long count = 0, x = -1, y = -1;
};

TEST(DrawBrowser, ChromiumShowsTheRectangles) {
  const std::string chromium = find_program("chromium");
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium is not installed (Debian's `chromium`, scripts/bootstrap installs "
                    "it): the HTML picture is not checked in a browser";
  }
  if (find_program("python3").empty()) GTEST_SKIP() << "python3 is not installed";

  // Four tagged buffers in a 2 x 2 layout: left/right by time, bottom/top by offset.
  testing::Plan p;
  p.add("bottom-left", 0, 10, 100 << 20, 0);
  p.add("bottom-right", 10, 20, 100 << 20, 0);
  p.add("top-left", 0, 10, 100 << 20, 100 << 20);
  p.add("top-right", 10, 20, 60 << 20, 100 << 20);
  const std::vector<std::string> tags{"alpha", "beta", "gamma", "delta"};
  std::vector<std::string> hex;
  for (const std::string& tag : tags) {
    const Rgb colour = colour_for(tag);
    hex.push_back(to_hex(colour));
  }

  const auto dir =
      std::filesystem::temp_directory_path() / fmt::format("memplan_browser_{}", ::getpid());
  std::filesystem::create_directories(dir);
  write_picture(dir / "page.html", p.problem, p.offsets, {.title = "browser test", .tags = tags});
  const int chromium_rc =
      run_chromium(chromium, dir, "--hide-scrollbars --screenshot=" + (dir / "shot.png").string(),
                   dir / "page.html", "/dev/null");
  ASSERT_EQ(chromium_rc, 0) << "chromium failed (124: timed out):\n" << tail(dir / "chromium.log");
  ASSERT_TRUE(std::filesystem::exists(dir / "shot.png")) << tail(dir / "chromium.log");

  std::string colours;
  for (const std::string& h : hex) colours += fmt::format(" {}", h.substr(1));
  ASSERT_EQ(
      run(fmt::format("timeout 120 python3 {}/png_colours.py {}{} > {} 2>&1", MEMPLAN_DRAW_TEST_DIR,
                      (dir / "shot.png").string(), colours, (dir / "colours.txt").string())),
      0)
      << tail(dir / "colours.txt");
  std::ifstream in(dir / "colours.txt");
  long width = 0, height = 0;
  in >> width >> height;
  ASSERT_EQ(width, 900);
  ASSERT_EQ(height, 600);
  Found found[4];
  for (Found& f : found) in >> f.count >> f.x >> f.y;
  ASSERT_TRUE(in) << tail(dir / "colours.txt");

  for (std::size_t k = 0; k < 4; ++k) {
    // A quarter of a plot of about 470 x 480 pixels; the legend's swatch adds 144 at most.
    EXPECT_GT(found[k].count, 20'000) << tags[k] << " (" << hex[k] << ") is missing or small";
    EXPECT_LT(found[k].x, width - 330) << tags[k] << " is not in the plot";
  }
  EXPECT_LT(found[0].x + 100, found[1].x) << "bottom-left is not left of bottom-right";
  EXPECT_LT(found[2].x + 100, found[3].x) << "top-left is not left of top-right";
  EXPECT_LT(found[2].y + 100, found[0].y) << "top-left is not above bottom-left";
  EXPECT_LT(found[3].y + 50, found[1].y) << "top-right is not above bottom-right";
  EXPECT_LT(found[3].count, found[2].count) << "top-right (60 MiB) is not smaller than top-left";

  // Hover: a mouse move where the screenshot shows top-left fills the tooltip with its
  // description (the page, with a script that moves the mouse, dumped after it ran).
  std::string page = to_html(p.problem, p.offsets, {.title = "browser test", .tags = tags});
  const std::string move = fmt::format(
      "<script>document.getElementById('plot').dispatchEvent(new MouseEvent('mousemove', "
      "{{clientX: {}, clientY: {}, bubbles: true}}));</script>\n</body>",
      found[2].x, found[2].y);
  page.replace(page.rfind("</body>"), 7, move);
  std::ofstream(dir / "hover.html") << page;
  ASSERT_EQ(run_chromium(chromium, dir, "--dump-dom", dir / "hover.html", dir / "dom.html"), 0)
      << tail(dir / "chromium.log");
  const std::string dom = read(dir / "dom.html");
  EXPECT_NE(dom.find("<div>top-left · gamma</div><div>100 MiB (104857600 B)</div>"
                     "<div>live [0, 10)</div><div>at [100 MiB, 200 MiB)</div>"),
            std::string::npos)
      << "no tooltip for top-left at (" << found[2].x << ", " << found[2].y << "):\n"
      << tail(dir / "dom.html");
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace memplan::draw
