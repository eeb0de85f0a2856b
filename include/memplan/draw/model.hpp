// What a picture shows, computed once and apart from how it is drawn: the time and address
// extent, the peak instant and the buffers live there (largest first, with their share of the
// peak), a colour per buffer, and for the SVG the choice of which rectangles to draw one by one
// and which to merge into cells of a coarse pixel grid. The renderers (svg.cpp, html.cpp) only
// lay this out; the tests check it here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/draw/picture.hpp"
#include "memplan/plan/problem.hpp"
#include "memplan/types.hpp"

namespace memplan::draw {

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
  friend bool operator==(const Rgb&, const Rgb&) = default;
};

// A stable colour for a key (a tag, or a buffer's id when there are no tags): the same key gets
// the same colour in every picture. Mid lightness and saturation, so black text reads on it.
[[nodiscard]] Rgb colour_for(std::string_view key);
// "#rrggbb".
[[nodiscard]] std::string to_hex(Rgb colour);

struct LiveBuffer {
  std::size_t buffer = 0;  // index into the problem
  Bytes size = 0;
  double share = 0;  // size / peak bytes
};

struct PictureModel {
  plan::Time time_begin = 0;    // the earliest lower of a buffer that occupies memory
  plan::Time time_end = 1;      // the latest upper; > time_begin
  Bytes arena_size = 0;         // max(offset + size): the top of the highest buffer
  Bytes top = 1;                // the address axis runs over [0, top): max(arena, lower bound, 1)
  Bytes lower_bound = -1;       // from the options; < 0 when not drawn
  plan::Time peak_instant = 0;  // the first instant with the most bytes live
  Bytes peak_bytes = 0;         // bytes live then (plan::find_peak)
  std::vector<LiveBuffer> live_at_peak;   // largest first (then by index); shares sum to 1
  std::vector<std::size_t> drawn;         // the buffers that occupy memory, in problem order
  std::vector<Rgb> palette;               // distinct colours
  std::vector<std::string> palette_tags;  // with tags: the tag of each palette entry
  std::vector<std::uint32_t> colour;      // per buffer: its palette entry
};

// Validates the plan (see picture.hpp for what throws) and computes the model.
[[nodiscard]] PictureModel build_model(const plan::Problem& problem, std::span<const Bytes> offsets,
                                       const DrawOptions& options);

// The legend's last row: the buffers live at the peak from the `shown`-th on, summed.
struct LiveRest {
  Bytes bytes = 0;
  double share = 0;
};
[[nodiscard]] LiveRest live_after(const PictureModel& model, std::size_t shown);

// The plot area in pixels and the linear maps from time and address into it (address 0 at the
// bottom, top at y = 0).
struct Scale {
  double width = 0, height = 0;
  plan::Time time_begin = 0, time_end = 1;
  Bytes top = 1;
  [[nodiscard]] double x(plan::Time t) const;
  [[nodiscard]] double y(Bytes address) const;
};
[[nodiscard]] Scale scale_for(const PictureModel& model, double width, double height);

// Past `exact_limit` buffers the SVG draws a rectangle alone only when it covers at least
// kMinDrawnArea square pixels; the others are summed into cells of kCellPixels x kCellPixels.
// Rectangles of a valid plan never overlap, so at most width*height/kMinDrawnArea of them are
// that large, and there are at most (width/kCellPixels + 1)*(height/kCellPixels + 1) cells.
inline constexpr std::size_t kSvgExactLimit = 5000;
inline constexpr double kMinDrawnArea = 64;
inline constexpr double kCellPixels = 8;

struct Cell {
  std::uint32_t column = 0, row = 0;  // the cell's origin is (column, row) * kCellPixels
  double covered = 0;                 // square pixels of buffers in it (<= kCellPixels^2)
  std::size_t buffers = 0;            // how many buffers touch it
  std::size_t dominant = 0;           // the buffer covering most of it: its colour
  double dominant_area = 0;
};

struct Aggregation {
  std::vector<std::size_t> alone;  // buffers drawn as their own rectangle, in problem order
  std::vector<Cell> cells;         // the rest, merged; by row, then column
};
[[nodiscard]] Aggregation aggregate(const plan::Problem& problem, std::span<const Bytes> offsets,
                                    const PictureModel& model, const Scale& scale,
                                    std::size_t exact_limit = kSvgExactLimit);

// Axis ticks: about `count` round values in [begin, end] (1, 2 or 5 times a power of ten, and for
// time at least 1; for bytes, of the binary unit that fits the range); never more than
// 4 * count + 2, whatever the values' precision.
[[nodiscard]] std::vector<double> time_ticks(double begin, double end, int count);
[[nodiscard]] std::vector<Bytes> byte_ticks(Bytes top, int count);
// A byte tick's label in the binary unit of `top`, so that all labels of an axis share it:
// "0", "512 MiB", "1.5 GiB".
[[nodiscard]] std::string byte_tick_label(Bytes value, Bytes top);

// The legend beside the peak lists this many of the buffers live there, then "N more".
inline constexpr std::size_t kLegendRows = 15;

}  // namespace memplan::draw
