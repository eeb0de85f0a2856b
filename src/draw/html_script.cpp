#include "html_script.hpp"

namespace memplan::draw::detail {

const char* const kPictureStyle = R"css(
html, body { margin: 0; height: 100%; font: 13px sans-serif; color: #222; background: #fff; }
header { height: 56px; padding: 6px 16px; box-sizing: border-box; }
header h1 { margin: 0; font-size: 18px; }
header .sub { color: #555; }
main { display: flex; height: calc(100% - 56px); }
#plot { flex: 1; min-width: 0; height: 100%; display: block; cursor: crosshair; }
aside { width: 330px; overflow: auto; padding: 0 12px; box-sizing: border-box; }
aside h2 { font-size: 14px; margin: 8px 0; }
aside .row { display: flex; gap: 6px; align-items: baseline; margin: 3px 0; }
aside .row[data-k]:hover { background: #eeeeee; }
aside .sw { width: 12px; height: 12px; flex: none; display: inline-block; }
aside .id { color: #555; font-size: 11px; overflow-wrap: anywhere; }
#tip { position: fixed; pointer-events: none; background: #fffff0; border: 1px solid #888;
       padding: 4px 6px; font-size: 12px; display: none; max-width: 420px; }
)css";

const char* const kPictureScript = R"js(
"use strict";
(function () {
  const cv = document.getElementById("plot"), ctx = cv.getContext("2d");
  const tip = document.getElementById("tip");
  const n = D.L.length, M = { l: 90, r: 16, t: 24, b: 44 };
  const full = { t0: D.t0, t1: D.t1, a0: 0, a1: D.top };
  let v = Object.assign({}, full), W = 0, H = 0, marked = -1;  // marked: a legend row's buffer
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  function human(b) {
    let x = Math.abs(b), u = 0;
    if (x < 1024) return b + " B";
    while (x >= 1024 && u < 6) { x /= 1024; u++; }
    const s = x < 9.995 ? x.toFixed(2) : x < 99.95 ? x.toFixed(1) : x.toFixed(0);
    return (b < 0 ? "-" : "") + s + " " + units[u];
  }
  // Times travel relative to D.tbase (a decimal string: traces may count in nanoseconds since
  // 1970, past a double's exact integers); shown with it added back, exactly when whole.
  function time(t) {
    if (D.tbase === "0") return String(+t.toPrecision(12));
    return Number.isInteger(t) ? (BigInt(D.tbase) + BigInt(t)).toString()
                               : "+" + (+t.toPrecision(12)) + " from " + D.tbase;
  }
  function roundStep(raw) {
    const m = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const f of [1, 2, 5]) if (f * m >= raw) return f * m;
    return 10 * m;
  }
  const pw = () => W - M.l - M.r, ph = () => H - M.t - M.b;
  const px = t => M.l + (t - v.t0) / (v.t1 - v.t0) * pw();
  const py = a => M.t + (1 - (a - v.a0) / (v.a1 - v.a0)) * ph();
  // Buffers by colour, so that a frame sets each fill style once.
  const order = Int32Array.from({ length: n }, (_, i) => i).sort((a, b) => D.C[a] - D.C[b]);

  // Grid index over the full extent: the buffers touching each of G x G cells (CSR arrays).
  const G = 128, start = new Int32Array(G * G + 1);
  const cellT = t => Math.min(G - 1, Math.max(0, Math.floor((t - full.t0) / (full.t1 - full.t0) * G)));
  const cellA = a => Math.min(G - 1, Math.max(0, Math.floor(a / full.a1 * G)));
  function eachCell(i, f) {
    const c0 = cellT(D.L[i]), c1 = cellT(D.U[i]), r0 = cellA(D.O[i]), r1 = cellA(D.O[i] + D.S[i]);
    for (let r = r0; r <= r1; r++) for (let c = c0; c <= c1; c++) f(r * G + c);
  }
  for (let i = 0; i < n; i++) eachCell(i, k => start[k + 1]++);
  for (let k = 0; k < G * G; k++) start[k + 1] += start[k];
  const fill = start.slice(0, G * G), items = new Int32Array(start[G * G]);
  for (let i = 0; i < n; i++) eachCell(i, k => { items[fill[k]++] = i; });

  // Labelled above the line (below it near the top), at the left or the right end: the lower
  // bound and the arena size often coincide, and their labels must not.
  function hline(a, colour, label, right) {
    if (a < 0) return;
    const y = py(a);
    ctx.strokeStyle = colour; ctx.fillStyle = colour; ctx.setLineDash([6, 4]); ctx.lineWidth = 1.5;
    ctx.beginPath(); ctx.moveTo(M.l, y); ctx.lineTo(M.l + pw(), y); ctx.stroke();
    ctx.textAlign = right ? "right" : "left";
    ctx.fillText(label, right ? M.l + pw() - 4 : M.l + 4, y - M.t < 16 ? y + 14 : y - 4);
  }
  function draw() {
    ctx.setTransform(window.devicePixelRatio || 1, 0, 0, window.devicePixelRatio || 1, 0, 0);
    ctx.fillStyle = "#ffffff"; ctx.fillRect(0, 0, W, H);
    ctx.fillStyle = "#f4f4f4"; ctx.fillRect(M.l, M.t, pw(), ph());
    ctx.save();
    ctx.beginPath(); ctx.rect(M.l, M.t, pw(), ph()); ctx.clip();
    let colour = -1;
    const big = [];
    for (const i of order) {
      const x0 = px(D.L[i]), x1 = px(D.U[i]), y0 = py(D.O[i] + D.S[i]), y1 = py(D.O[i]);
      if (x1 < M.l || x0 > M.l + pw() || y1 < M.t || y0 > M.t + ph()) continue;
      // One path per colour: far fewer calls than a fillRect per buffer (about half the time).
      if (D.C[i] !== colour) {
        if (colour >= 0) ctx.fill();
        colour = D.C[i]; ctx.fillStyle = D.palette[colour]; ctx.beginPath();
      }
      // At least a pixel, so that no buffer disappears at any zoom.
      ctx.rect(x0, y0, Math.max(x1 - x0, 1), Math.max(y1 - y0, 1));
      if (x1 - x0 > 6 && y1 - y0 > 6) big.push(x0, y0, x1 - x0, y1 - y0);
    }
    if (colour >= 0) ctx.fill();
    ctx.strokeStyle = "#ffffff"; ctx.lineWidth = 1; ctx.setLineDash([]);
    for (let k = 0; k < big.length; k += 4) ctx.strokeRect(big[k], big[k + 1], big[k + 2], big[k + 3]);
    ctx.font = "12px sans-serif";
    hline(D.lb, "#1a7f37", "lower bound " + human(D.lb), false);
    hline(D.arena, "#c62828", "arena " + human(D.arena), true);
    if (marked >= 0) {  // the buffer of the legend row under the mouse
      const i = marked, x0 = px(D.L[i]), y0 = py(D.O[i] + D.S[i]);
      ctx.strokeStyle = "#000000"; ctx.lineWidth = 3; ctx.setLineDash([]);
      ctx.strokeRect(x0 - 2, y0 - 2, Math.max(px(D.U[i]) - x0, 1) + 4, Math.max(py(D.O[i]) - y0, 1) + 4);
    }
    const x = px(D.peak);
    ctx.strokeStyle = "#000000"; ctx.setLineDash([3, 3]); ctx.lineWidth = 1.5;
    ctx.beginPath(); ctx.moveTo(x, M.t); ctx.lineTo(x, M.t + ph()); ctx.stroke();
    ctx.restore();
    ctx.setLineDash([]); ctx.fillStyle = "#000000"; ctx.textAlign = "center"; ctx.font = "12px sans-serif";
    if (x >= M.l && x <= M.l + pw()) ctx.fillText("peak " + human(D.peakBytes) + " at t=" + time(D.peak), x, M.t - 8);
    axes();
  }
  function axes() {
    ctx.strokeStyle = "#555555"; ctx.fillStyle = "#333333"; ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(M.l, M.t); ctx.lineTo(M.l, M.t + ph()); ctx.lineTo(M.l + pw(), M.t + ph()); ctx.stroke();
    const ts = Math.max(1, roundStep((v.t1 - v.t0) / 10));  // instants are whole
    ctx.textAlign = "center";
    // Counted, not accumulated: a step below the values' precision cannot loop forever.
    for (let k = Math.ceil(v.t0 / ts), n = 0; k * ts <= v.t1 && n < 40; k++, n++) {
      const t = k * ts, x = px(t);
      ctx.beginPath(); ctx.moveTo(x, M.t + ph()); ctx.lineTo(x, M.t + ph() + 5); ctx.stroke();
      ctx.fillText(time(+t.toPrecision(12)), x, M.t + ph() + 18);
    }
    ctx.fillText("time", M.l + pw() / 2, M.t + ph() + 36);
    let unit = 1, u = 0;
    while ((v.a1 - v.a0) / unit >= 1024 && u < 6) { unit *= 1024; u++; }
    const as = roundStep((v.a1 - v.a0) / unit / 8) * unit;
    ctx.textAlign = "right";
    for (let k = Math.ceil(v.a0 / as), n = 0; k * as <= v.a1 && n < 40; k++, n++) {
      const a = k * as, y = py(a);
      ctx.beginPath(); ctx.moveTo(M.l - 5, y); ctx.lineTo(M.l, y); ctx.stroke();
      ctx.fillText(a === 0 ? "0" : +(a / unit).toPrecision(4) + " " + units[u], M.l - 8, y + 4);
    }
    ctx.save(); ctx.translate(16, M.t + ph() / 2); ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "center"; ctx.fillText("address", 0, 0); ctx.restore();
  }
  let pending = false;
  function redraw() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; draw(); });
  }
  function resize() {
    const r = cv.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
    W = r.width; H = r.height;
    cv.width = Math.round(W * dpr); cv.height = Math.round(H * dpr);
    draw();
  }
  // The buffer under the mouse, or the nearest within 4 pixels.
  function hit(mx, my) {
    const t = v.t0 + (mx - M.l) / pw() * (v.t1 - v.t0), a = v.a0 + (1 - (my - M.t) / ph()) * (v.a1 - v.a0);
    const dt = 4 / pw() * (v.t1 - v.t0), da = 4 / ph() * (v.a1 - v.a0);
    let best = -1, bestDistance = Infinity;
    for (let r = cellA(a - da); r <= cellA(a + da); r++) {
      for (let c = cellT(t - dt); c <= cellT(t + dt); c++) {
        for (let k = start[r * G + c]; k < start[r * G + c + 1]; k++) {
          const i = items[k];
          const ox = Math.max(px(D.L[i]) - mx, 0, mx - Math.max(px(D.U[i]), px(D.L[i]) + 1));
          const oy = Math.max(py(D.O[i] + D.S[i]) - my, 0, my - Math.max(py(D.O[i]), py(D.O[i] + D.S[i]) + 1));
          const d = Math.hypot(ox, oy);
          if (d < bestDistance) { bestDistance = d; best = i; }
        }
      }
    }
    return bestDistance <= 4 ? best : -1;
  }
  let drag = null;
  for (const row of document.querySelectorAll("aside .row[data-k]")) {
    row.addEventListener("mouseenter", () => { marked = +row.dataset.k; redraw(); });
    row.addEventListener("mouseleave", () => { marked = -1; redraw(); });
  }
  cv.addEventListener("mousemove", e => {
    const r = cv.getBoundingClientRect(), mx = e.clientX - r.left, my = e.clientY - r.top;
    if (drag) {
      const dt = (mx - drag.x) / pw() * (v.t1 - v.t0), da = (my - drag.y) / ph() * (v.a1 - v.a0);
      v.t0 -= dt; v.t1 -= dt; v.a0 += da; v.a1 += da; drag = { x: mx, y: my };
      redraw();
      return;
    }
    const i = hit(mx, my);
    if (i < 0) { tip.style.display = "none"; return; }
    const tag = D.tags ? D.tags[D.C[i]] : "";
    tip.textContent = "";
    for (const line of [D.I[i] + (tag ? " \u00b7 " + tag : ""),
                        human(D.S[i]) + " (" + D.S[i] + " B)",
                        "live [" + time(D.L[i]) + ", " + time(D.U[i]) + ")",
                        "at [" + human(D.O[i]) + ", " + human(D.O[i] + D.S[i]) + ")",
                        (100 * D.S[i] / D.peakBytes).toFixed(1) + "% of the peak"]) {
      const div = document.createElement("div"); div.textContent = line; tip.appendChild(div);
    }
    tip.style.display = "block";
    tip.style.left = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth - 4) + "px";
    tip.style.top = Math.min(e.clientY + 14, window.innerHeight - tip.offsetHeight - 4) + "px";
  });
  cv.addEventListener("mousedown", e => {
    const r = cv.getBoundingClientRect(); drag = { x: e.clientX - r.left, y: e.clientY - r.top };
  });
  window.addEventListener("mouseup", () => { drag = null; });
  cv.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  cv.addEventListener("wheel", e => {
    e.preventDefault();
    const r = cv.getBoundingClientRect(), mx = e.clientX - r.left, my = e.clientY - r.top;
    // Zoom in no further than a hundredth of an instant and a byte across the plot.
    const f = Math.max(Math.exp(e.deltaY * 0.002), 0.01 / (v.t1 - v.t0), 1 / (v.a1 - v.a0));
    const t = v.t0 + (mx - M.l) / pw() * (v.t1 - v.t0), a = v.a0 + (1 - (my - M.t) / ph()) * (v.a1 - v.a0);
    v.t0 = t - (t - v.t0) * f; v.t1 = t + (v.t1 - t) * f;
    if (!e.shiftKey) { v.a0 = a - (a - v.a0) * f; v.a1 = a + (v.a1 - a) * f; }
    redraw();
  }, { passive: false });
  cv.addEventListener("dblclick", () => { v = Object.assign({}, full); draw(); });
  window.addEventListener("resize", resize);
  resize();
})();
)js";

}  // namespace memplan::draw::detail
