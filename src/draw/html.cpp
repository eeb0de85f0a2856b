// The HTML renderer: one self-contained page. The buffers travel as compact arrays in a data
// object (lower, upper, offset, size, colour entry, id: about 40 bytes a buffer), drawn on a
// canvas by the embedded script (html_script.cpp); the legend of the buffers live at the peak is
// plain HTML beside it. Nothing is fetched: no network, no external scripts or fonts.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "core/json_writer.hpp"
#include "html_script.hpp"
#include "memplan/draw/model.hpp"
#include "memplan/draw/picture.hpp"
#include "text.hpp"

namespace memplan::draw {
namespace {

using detail::xml_escape;
using memplan::detail::json_string;

// "name:[v0,v1,...]," over the drawn buffers.
template <typename Value>
void array(std::string& out, std::string_view name, const PictureModel& model, Value&& value) {
  out += name;
  out += ":[";
  for (std::size_t k = 0; k < model.drawn.size(); ++k) {
    if (k > 0) out += ',';
    fmt::format_to(std::back_inserter(out), "{}", value(model.drawn[k]));
  }
  out += "],\n";
}

void data(std::string& out, const plan::Problem& problem, std::span<const Bytes> offsets,
          const PictureModel& model) {
  fmt::format_to(
      std::back_inserter(out),
      "const D = {{tbase:\"{}\",t0:0,t1:{},top:{},arena:{},lb:{},peak:{},peakBytes:{},\n",
      model.time_begin, model.time_end - model.time_begin, model.top, model.arena_size,
      model.lower_bound, model.peak_instant - model.time_begin, model.peak_bytes);
  // Times relative to the first instant, exact in the script's doubles (see kPictureScript).
  const auto& buffers = problem.buffers;
  const plan::Time base = model.time_begin;
  array(out, "L", model, [&](std::size_t i) { return buffers[i].lower - base; });
  array(out, "U", model, [&](std::size_t i) { return buffers[i].upper - base; });
  array(out, "O", model, [&](std::size_t i) { return offsets[i]; });
  array(out, "S", model, [&](std::size_t i) { return buffers[i].size; });
  array(out, "C", model, [&](std::size_t i) { return model.colour[i]; });
  array(out, "I", model, [&](std::size_t i) { return json_string(buffers[i].id); });
  out += "palette:[";
  for (std::size_t k = 0; k < model.palette.size(); ++k) {
    fmt::format_to(std::back_inserter(out), "{}\"{}\"", k > 0 ? "," : "", to_hex(model.palette[k]));
  }
  out += "],\ntags:";
  if (model.palette_tags.empty()) {
    out += "null";
  } else {
    out += '[';
    for (std::size_t k = 0; k < model.palette_tags.size(); ++k) {
      if (k > 0) out += ',';
      out += json_string(model.palette_tags[k]);
    }
    out += ']';
  }
  out += "};\n";
}

// A legend row; `drawn` >= 0 is the buffer's place in the data arrays, which the script
// outlines on the plot while the mouse is over the row.
void swatch_row(std::string& out, Rgb colour, const std::string& text, const std::string& below,
                std::ptrdiff_t drawn = -1) {
  fmt::format_to(std::back_inserter(out),
                 "<div class=\"row\"{}><span class=\"sw\" style=\"background:{}\"></span>"
                 "<span>{}{}</span></div>\n",
                 drawn < 0 ? "" : fmt::format(" data-k=\"{}\"", drawn), to_hex(colour),
                 xml_escape(text),
                 below.empty() ? "" : "<br><span class=\"id\">" + xml_escape(below) + "</span>");
}

void legend(std::string& out, const plan::Problem& problem, const PictureModel& model) {
  fmt::format_to(std::back_inserter(out), "<aside>\n<h2>Live at the peak (t={}): {}</h2>\n",
                 model.peak_instant, human_bytes(model.peak_bytes));
  const std::size_t shown = std::min(model.live_at_peak.size(), kLegendRows);
  for (std::size_t k = 0; k < shown; ++k) {
    const LiveBuffer& live = model.live_at_peak[k];
    const std::string tag = model.palette_tags.empty()
                                ? ""
                                : " [" + model.palette_tags[model.colour[live.buffer]] + "]";
    swatch_row(out, model.palette[model.colour[live.buffer]],
               fmt::format("{} · {}{}", human_bytes(live.size), detail::percent(live.share), tag),
               problem.buffers[live.buffer].id,
               std::lower_bound(model.drawn.begin(), model.drawn.end(), live.buffer) -
                   model.drawn.begin());
  }
  if (shown < model.live_at_peak.size()) {
    const LiveRest rest = live_after(model, shown);
    fmt::format_to(std::back_inserter(out), "<div class=\"row\">{} more: {} · {}</div>\n",
                   model.live_at_peak.size() - shown, human_bytes(rest.bytes),
                   detail::percent(rest.share));
  }
  if (!model.palette_tags.empty()) {
    out += "<h2>Tags</h2>\n";
    for (std::size_t k = 0; k < model.palette_tags.size() && k < 40; ++k) {
      swatch_row(out, model.palette[k], model.palette_tags[k], "");
    }
    if (model.palette_tags.size() > 40) {
      fmt::format_to(std::back_inserter(out), "<div class=\"row\">{} more tags</div>\n",
                     model.palette_tags.size() - 40);
    }
  }
  out +=
      "<p class=\"id\">Hover a buffer for its id, size and lifetime, a row above to find it on "
      "the plot. Wheel: zoom (Shift: time only); drag: pan; double-click: reset.</p>\n</aside>\n";
}

}  // namespace

std::string to_html(const plan::Problem& problem, std::span<const Bytes> offsets,
                    const DrawOptions& options) {
  const PictureModel model = build_model(problem, offsets, options);
  std::string out;
  fmt::format_to(std::back_inserter(out),
                 "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                 "<title>{0}</title>\n<style>{1}</style>\n</head>\n<body>\n"
                 "<header><h1>{0}</h1><div class=\"sub\">{2} buffers · arena {3} · peak {4} at "
                 "t={5}{6}</div></header>\n"
                 "<main><canvas id=\"plot\"></canvas>\n",
                 xml_escape(options.title.empty() ? "memplan plan" : options.title),
                 detail::kPictureStyle, model.drawn.size(), human_bytes(model.arena_size),
                 human_bytes(model.peak_bytes), model.peak_instant,
                 model.lower_bound >= 0 ? " · lower bound " + human_bytes(model.lower_bound) : "");
  legend(out, problem, model);
  out += "</main>\n<div id=\"tip\"></div>\n<script>\n";
  data(out, problem, offsets, model);
  out += "</script>\n<script>";
  out += detail::kPictureScript;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace memplan::draw
