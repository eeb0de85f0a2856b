#!/usr/bin/env bash
# Times an HTML picture in headless Chromium: load (parse the data, build the hover index, first
# frame), one full redraw, one hover lookup; prints one JSON line. The page is copied with a
# timing script added; the picture itself is unchanged.
#   MEMPLAN_DRAW_PAGE=/tmp/page.html build/cpu/bench/draw_bench --benchmark_filter=none
#   bench/draw_browser.sh /tmp/page.html
set -euo pipefail
page=${1:?usage: draw_browser.sh PAGE.html}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$page" "$work/timed.html" <<'PY'
import sys
text = open(sys.argv[1], encoding="utf-8").read()
text = text.replace("<script>\nconst D", "<script>const t0 = performance.now();</script>\n<script>\nconst D", 1)
probe = """<script>
const loaded = performance.now(), plot = document.getElementById("plot");
let t = performance.now();
for (let k = 0; k < 10; k++) plot.dispatchEvent(new MouseEvent("dblclick", {bubbles: true}));
const redraw = (performance.now() - t) / 10;
t = performance.now();
for (let k = 0; k < 1000; k++) plot.dispatchEvent(new MouseEvent("mousemove",
    {clientX: 100 + k % 800, clientY: 100 + (k * 7) % 500, bubbles: true}));
const hover = (performance.now() - t) / 1000;
document.body.dataset.times = JSON.stringify({load_ms: loaded - t0, redraw_ms: redraw, hover_ms: hover});
</script>
</body>"""
at = text.rfind("</body>")
open(sys.argv[2], "w", encoding="utf-8").write(text[:at] + probe + text[at + 7:])
PY
timeout -k 5 120 chromium --headless --no-sandbox --disable-gpu --no-first-run \
  --user-data-dir="$work/profile" --window-size=1400,760 --dump-dom "file://$work/timed.html" \
  2>/dev/null | grep -o 'data-times="[^"]*"' | sed -e 's/^data-times="//' -e 's/"$//' -e 's/&quot;/"/g'
