// The SVG renderer: a fixed 1400 x 720 picture. The plot (time right, address up) holds one
// rectangle per buffer with its description as a <title>, or past kSvgExactLimit buffers the
// large ones and cells of merged small ones (model.hpp). Then the lines (lower bound, arena
// size, peak instant), the axes, and on the right the legend of the buffers live at the peak.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "memplan/draw/model.hpp"
#include "memplan/draw/picture.hpp"
#include "text.hpp"

namespace memplan::draw {
namespace {

constexpr double kWidth = 1400, kHeight = 720;
constexpr double kLeft = 100, kTop = 70, kPlotWidth = 940, kPlotHeight = 580;
constexpr double kLegendLeft = kLeft + kPlotWidth + 30;

using detail::xml_escape;

std::string_view tag_of(const PictureModel& model, std::size_t buffer) {
  return model.palette_tags.empty() ? std::string_view{}
                                    : std::string_view{model.palette_tags[model.colour[buffer]]};
}

void buffer_rects(std::string& out, const plan::Problem& problem, std::span<const Bytes> offsets,
                  const PictureModel& model, const Scale& scale, const Aggregation& aggregation) {
  out += "<g id=\"buffers\" stroke=\"#ffffff\" stroke-width=\"0.5\">\n";
  for (const std::size_t i : aggregation.alone) {
    const plan::Buffer& b = problem.buffers[i];
    const double x0 = scale.x(b.lower), x1 = scale.x(b.upper);
    const double y0 = scale.y(offsets[i] + b.size), y1 = scale.y(offsets[i]);
    fmt::format_to(std::back_inserter(out),
                   "<rect class=\"b\" x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
                   "fill=\"{}\"><title>{}</title></rect>\n",
                   x0, y0, x1 - x0, y1 - y0, to_hex(model.palette[model.colour[i]]),
                   xml_escape(detail::describe_buffer(b, offsets[i], tag_of(model, i))));
  }
  out += "</g>\n<g id=\"cells\">\n";
  for (const Cell& cell : aggregation.cells) {
    const double opacity = std::max(0.3, cell.covered / (kCellPixels * kCellPixels));
    fmt::format_to(std::back_inserter(out),
                   "<rect class=\"cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
                   "fill-opacity=\"{:.2f}\"><title>{} small buffers, e.g. {}</title></rect>\n",
                   cell.column * kCellPixels, cell.row * kCellPixels, kCellPixels, kCellPixels,
                   to_hex(model.palette[model.colour[cell.dominant]]), opacity, cell.buffers,
                   xml_escape(problem.buffers[cell.dominant].id));
  }
  out += "</g>\n";
}

// A dashed line across the plot, labelled above it (below it near the top), at the left or the
// right end: the lower bound and the arena size often coincide, and their labels must not.
void horizontal_line(std::string& out, double y, const char* colour, const std::string& label,
                     bool label_right) {
  fmt::format_to(std::back_inserter(out),
                 "<line x1=\"0\" x2=\"{}\" y1=\"{:.2f}\" y2=\"{:.2f}\" stroke=\"{}\" "
                 "stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n"
                 "<text x=\"{}\" y=\"{:.2f}\" fill=\"{}\" text-anchor=\"{}\">{}</text>\n",
                 kPlotWidth, y, y, colour, label_right ? kPlotWidth - 4 : 4,
                 y < 16 ? y + 14 : y - 4, colour, label_right ? "end" : "start", xml_escape(label));
}

void lines_and_axes(std::string& out, const PictureModel& model, const Scale& scale) {
  if (model.lower_bound >= 0) {
    horizontal_line(out, scale.y(model.lower_bound), "#1a7f37",
                    "lower bound " + human_bytes(model.lower_bound), false);
  }
  horizontal_line(out, scale.y(model.arena_size), "#c62828",
                  "arena " + human_bytes(model.arena_size), true);
  const double peak_x = scale.x(model.peak_instant);
  fmt::format_to(std::back_inserter(out),
                 "<line id=\"peak\" x1=\"{0:.2f}\" x2=\"{0:.2f}\" y1=\"0\" y2=\"{1}\" "
                 "stroke=\"#000000\" stroke-width=\"1.5\" stroke-dasharray=\"3 3\"/>\n"
                 "<text x=\"{0:.2f}\" y=\"-6\" text-anchor=\"middle\">peak {2} at t={3}</text>\n",
                 peak_x, kPlotHeight, human_bytes(model.peak_bytes), model.peak_instant);

  out += "<g id=\"axes\" stroke=\"#555555\" fill=\"#333333\">\n";
  fmt::format_to(
      std::back_inserter(out),
      "<line x1=\"0\" x2=\"{0}\" y1=\"{1}\" y2=\"{1}\"/><line x1=\"0\" x2=\"0\" y1=\"0\" "
      "y2=\"{1}\"/>\n",
      kPlotWidth, kPlotHeight);
  for (const double t :
       time_ticks(static_cast<double>(model.time_begin), static_cast<double>(model.time_end), 10)) {
    const double x = (t - static_cast<double>(model.time_begin)) /
                     static_cast<double>(model.time_end - model.time_begin) * kPlotWidth;
    fmt::format_to(
        std::back_inserter(out),
        "<line x1=\"{0:.2f}\" x2=\"{0:.2f}\" y1=\"{1}\" y2=\"{2}\"/>"
        "<text x=\"{0:.2f}\" y=\"{3}\" stroke=\"none\" text-anchor=\"middle\">{4}</text>\n",
        x, kPlotHeight, kPlotHeight + 5, kPlotHeight + 18, t);
  }
  for (const Bytes value : byte_ticks(model.top, 8)) {
    fmt::format_to(std::back_inserter(out),
                   "<line x1=\"-5\" x2=\"0\" y1=\"{0:.2f}\" y2=\"{0:.2f}\"/>"
                   "<text x=\"-8\" y=\"{1:.2f}\" stroke=\"none\" text-anchor=\"end\">{2}</text>\n",
                   scale.y(value), scale.y(value) + 4, byte_tick_label(value, model.top));
  }
  fmt::format_to(std::back_inserter(out),
                 "<text x=\"{}\" y=\"{}\" stroke=\"none\" text-anchor=\"middle\">time</text>\n"
                 "<text transform=\"translate(-80,{}) rotate(-90)\" stroke=\"none\" "
                 "text-anchor=\"middle\">address</text>\n</g>\n",
                 kPlotWidth / 2, kPlotHeight + 36, kPlotHeight / 2);
}

void legend(std::string& out, const plan::Problem& problem, const PictureModel& model) {
  fmt::format_to(std::back_inserter(out),
                 "<g id=\"legend\" transform=\"translate({},{})\">\n"
                 "<text font-weight=\"bold\">live at the peak (t={}): {}</text>\n",
                 kLegendLeft, kTop, model.peak_instant, human_bytes(model.peak_bytes));
  const std::size_t shown = std::min(model.live_at_peak.size(), kLegendRows);
  double y = 24;
  for (std::size_t k = 0; k < shown; ++k, y += 22) {
    const LiveBuffer& live = model.live_at_peak[k];
    const std::string_view tag = tag_of(model, live.buffer);
    const std::string tag_text = tag.empty() ? "" : fmt::format(" [{}]", tag);
    fmt::format_to(std::back_inserter(out),
                   "<rect x=\"0\" y=\"{:.0f}\" width=\"12\" height=\"12\" fill=\"{}\"/>"
                   "<text x=\"18\" y=\"{:.0f}\">{} · {}{}</text>\n",
                   y - 10, to_hex(model.palette[model.colour[live.buffer]]), y,
                   human_bytes(live.size), detail::percent(live.share), xml_escape(tag_text));
    fmt::format_to(std::back_inserter(out),
                   "<text x=\"18\" y=\"{:.0f}\" fill=\"#555555\" "
                   "font-size=\"10\">{}</text>\n",
                   y + 12, xml_escape(problem.buffers[live.buffer].id.substr(0, 48)));
    y += 6;
  }
  if (shown < model.live_at_peak.size()) {
    const LiveRest rest = live_after(model, shown);
    fmt::format_to(std::back_inserter(out), "<text x=\"18\" y=\"{:.0f}\">{} more: {} · {}</text>\n",
                   y, model.live_at_peak.size() - shown, human_bytes(rest.bytes),
                   detail::percent(rest.share));
  }
  out += "</g>\n";
}

}  // namespace

std::string to_svg(const plan::Problem& problem, std::span<const Bytes> offsets,
                   const DrawOptions& options) {
  const PictureModel model = build_model(problem, offsets, options);
  const Scale scale = scale_for(model, kPlotWidth, kPlotHeight);
  const Aggregation aggregation = aggregate(problem, offsets, model, scale);
  std::string subtitle =
      fmt::format("{} buffers · arena {} · peak {} at t={}", model.drawn.size(),
                  human_bytes(model.arena_size), human_bytes(model.peak_bytes), model.peak_instant);
  if (model.lower_bound >= 0) subtitle += " · lower bound " + human_bytes(model.lower_bound);
  if (!aggregation.cells.empty()) {
    subtitle +=
        fmt::format(" · {} small buffers merged into {} cells",
                    model.drawn.size() - aggregation.alone.size(), aggregation.cells.size());
  }
  std::string out;
  fmt::format_to(std::back_inserter(out),
                 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                 "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
                 "<rect width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
                 "<text x=\"{2}\" y=\"28\" font-size=\"18\" font-weight=\"bold\">{3}</text>\n"
                 "<text x=\"{2}\" y=\"48\" fill=\"#555555\">{4}</text>\n"
                 "<g transform=\"translate({2},{5})\">\n"
                 "<rect width=\"{6}\" height=\"{7}\" fill=\"#f4f4f4\"/>\n",
                 kWidth, kHeight, kLeft, xml_escape(options.title), xml_escape(subtitle), kTop,
                 kPlotWidth, kPlotHeight);
  buffer_rects(out, problem, offsets, model, scale, aggregation);
  lines_and_axes(out, model, scale);
  out += "</g>\n";
  legend(out, problem, model);
  out += "</svg>\n";
  return out;
}

}  // namespace memplan::draw
