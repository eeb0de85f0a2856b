// From plan coordinates to pixels: the linear scales, the round values the axes are labelled
// with, and the SVG's aggregation of rectangles too small to see into a coarse grid of cells,
// which bounds the file however many buffers the plan has (see model.hpp for the bound).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "memplan/draw/model.hpp"

namespace memplan::draw {
namespace {

// 1, 2 or 5 times a power of ten, at least `raw`.
double round_step(double raw) {
  if (!(raw > 0)) return 1;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double factor : {1.0, 2.0, 5.0}) {
    if (factor * magnitude >= raw) return factor * magnitude;
  }
  return 10 * magnitude;
}

}  // namespace

double Scale::x(plan::Time t) const {
  return static_cast<double>(t - time_begin) / static_cast<double>(time_end - time_begin) * width;
}

double Scale::y(Bytes address) const {
  return height - static_cast<double>(address) / static_cast<double>(top) * height;
}

Scale scale_for(const PictureModel& model, double width, double height) {
  return {width, height, model.time_begin, model.time_end, model.top};
}

Aggregation aggregate(const plan::Problem& problem, std::span<const Bytes> offsets,
                      const PictureModel& model, const Scale& scale, std::size_t exact_limit) {
  Aggregation out;
  if (model.drawn.size() <= exact_limit) {
    out.alone = model.drawn;
    return out;
  }
  const auto columns = static_cast<std::size_t>(std::ceil(scale.width / kCellPixels)) + 1;
  const auto rows = static_cast<std::size_t>(std::ceil(scale.height / kCellPixels)) + 1;
  std::vector<Cell> grid(columns * rows);
  for (const std::size_t i : model.drawn) {
    const plan::Buffer& b = problem.buffers[i];
    const double x0 = scale.x(b.lower), x1 = scale.x(b.upper);
    const double y0 = scale.y(offsets[i] + b.size), y1 = scale.y(offsets[i]);
    if ((x1 - x0) * (y1 - y0) >= kMinDrawnArea) {
      out.alone.push_back(i);
      continue;
    }
    const auto first_column = static_cast<std::size_t>(std::max(0.0, x0 / kCellPixels));
    const auto first_row = static_cast<std::size_t>(std::max(0.0, y0 / kCellPixels));
    // The last cell the rectangle enters (one that it only touches at its edge is not one).
    const auto last = [](double end, std::size_t first, std::size_t count) {
      const auto past = static_cast<std::size_t>(std::ceil(end / kCellPixels));
      return std::min(count - 1, std::max(first, past == 0 ? 0 : past - 1));
    };
    const std::size_t last_column = last(x1, first_column, columns);
    const std::size_t last_row = last(y1, first_row, rows);
    for (std::size_t row = first_row; row <= last_row; ++row) {
      const double top = static_cast<double>(row) * kCellPixels;
      const double height = std::min(y1, top + kCellPixels) - std::max(y0, top);
      for (std::size_t column = first_column; column <= last_column; ++column) {
        const double left = static_cast<double>(column) * kCellPixels;
        const double width = std::min(x1, left + kCellPixels) - std::max(x0, left);
        const double area = std::max(0.0, width) * std::max(0.0, height);
        Cell& cell = grid[row * columns + column];
        cell.covered += area;
        ++cell.buffers;
        if (cell.buffers == 1 || area > cell.dominant_area) {
          cell.dominant = i;
          cell.dominant_area = area;
        }
      }
    }
  }
  for (std::size_t row = 0; row < rows; ++row) {
    for (std::size_t column = 0; column < columns; ++column) {
      Cell cell = grid[row * columns + column];
      if (cell.buffers == 0) continue;
      cell.column = static_cast<std::uint32_t>(column);
      cell.row = static_cast<std::uint32_t>(row);
      cell.covered = std::min(cell.covered, kCellPixels * kCellPixels);
      out.cells.push_back(cell);
    }
  }
  return out;
}

std::vector<double> time_ticks(double begin, double end, int count) {
  std::vector<double> ticks;
  if (!(end > begin) || count < 1) return ticks;
  // Counted, not accumulated: a step below the values' precision (times near 2^63) cannot loop
  // forever; at most 4 * count + 2 ticks.
  const double step = std::max(1.0, round_step((end - begin) / count));  // instants are whole
  const double first = std::ceil(begin / step);
  for (int k = 0; (first + k) * step <= end + step * 1e-9 && k <= 4 * count + 1; ++k) {
    ticks.push_back((first + k) * step);
  }
  return ticks;
}

std::vector<Bytes> byte_ticks(Bytes top, int count) {
  std::vector<Bytes> ticks;
  if (top <= 0 || count < 1) return ticks;
  double unit = 1;
  while (static_cast<double>(top) / unit >= 1024) unit *= 1024;
  const double step = std::max(1.0, round_step(static_cast<double>(top) / unit / count) * unit);
  for (int k = 0; k * step <= static_cast<double>(top) && k <= 4 * count + 1; ++k) {
    ticks.push_back(static_cast<Bytes>(std::llround(k * step)));
  }
  return ticks;
}

std::string byte_tick_label(Bytes value, Bytes top) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (value == 0) return "0";
  double unit = 1;
  std::size_t index = 0;
  while (static_cast<double>(top) / unit >= 1024 && index + 1 < std::size(kUnits)) {
    unit *= 1024;
    ++index;
  }
  return fmt::format("{:.4g} {}", static_cast<double>(value) / unit, kUnits[index]);
}

}  // namespace memplan::draw
