// duraq dashboard: live counts (per status and per queue) and the throughput
// chart on the overview page.
// One EventSource per tab on `/events`; each `counts` event carries the new
// counts as JSON. Values are written with textContent, never as HTML.
(function () {
  "use strict";
  function start() {
    var main = document.querySelector('main[data-page="overview"]');
    if (!main || !window.EventSource) return;
    var base = document.body.getAttribute("data-base") || "";
    var source = new EventSource(base + "/events");
    source.addEventListener("counts", function (event) {
      var data;
      try { data = JSON.parse(event.data); } catch (e) { return; }
      // Revisions only grow: an event older than what the page shows (the
      // poller's last reading, taken before the page was rendered) is skipped.
      var section = document.querySelector("[data-revision]");
      var shown = section ? Number(section.getAttribute("data-revision")) : NaN;
      if (typeof data.revision === "number" && data.revision < shown) return;
      var counts = data.counts || {};
      Object.keys(counts).forEach(function (key) {
        document.querySelectorAll('[data-count="' + key + '"]').forEach(function (el) {
          el.textContent = String(counts[key]);
        });
      });
      var queues = data.queues || {};
      document.querySelectorAll('table[data-table="queues"] tr[data-queue]').forEach(function (row) {
        var per = queues[row.getAttribute("data-queue")];
        if (!per) return;
        row.querySelectorAll("[data-queue-count]").forEach(function (cell) {
          var n = per[cell.getAttribute("data-queue-count")];
          if (typeof n === "number") cell.textContent = n.toLocaleString("en-US");
        });
      });
      if (section) section.setAttribute("data-revision", String(data.revision));
      if (Array.isArray(data.throughput)) draw(data.throughput);
    });
  }
  function draw(series) {
    var svg = document.getElementById("throughput");
    if (!svg) return;
    var max = Math.max.apply(null, series.concat([1]));
    var rects = svg.querySelectorAll("rect");
    series.forEach(function (n, i) {
      var rect = rects[i];
      if (!rect) return;
      var h = Math.round((n / max) * 96);
      rect.setAttribute("y", String(100 - h));
      rect.setAttribute("height", String(h));
      rect.setAttribute("data-n", String(n));
      var title = rect.querySelector("title");
      if (title) title.textContent = n + " jobs";
    });
    svg.setAttribute("data-max", String(max));
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
