// duraq dashboard: live counts (per status and per queue) and the throughput
// chart on the overview page; a running job's progress on its page; the jobs
// search opened on a wide window.
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
      if (typeof data.minute_ms === "number") refreshChart(base, data);
    });
  }
  // The chart is drawn by the server from the stored history: on a new minute,
  // or new counts (at most every 5 s), fetch this page again and swap in its
  // `#history` section.
  var chartKey = null, lastFetch = 0;
  function refreshChart(base, data) {
    var minuteChanged = chartKey !== null && chartKey.minute !== data.minute_ms;
    var countsChanged = chartKey !== null && chartKey.revision !== data.revision;
    if (chartKey === null) { chartKey = { minute: data.minute_ms, revision: data.revision }; return; }
    if (!minuteChanged && !(countsChanged && Date.now() - lastFetch > 5000)) return;
    chartKey = { minute: data.minute_ms, revision: data.revision };
    lastFetch = Date.now();
    fetch(window.location.href, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (text) {
        if (!text) return;
        var fresh = new DOMParser().parseFromString(text, "text/html").getElementById("history");
        var old = document.getElementById("history");
        if (fresh && old) old.replaceWith(document.importNode(fresh, true));
      })
      .catch(function () {});
  }
  // A running job's page: fetch the page again every 2 s (the worker stores
  // progress at most once a second) and swap in its `#progress` section and
  // status, until the section comes back without `data-live`.
  function followProgress() {
    var main = document.querySelector('main[data-page="job"]');
    var section = main && document.getElementById("progress");
    if (!section || !section.hasAttribute("data-live") || !window.fetch) return;
    var timer = setInterval(function () {
      fetch(window.location.href, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (text) {
          if (!text) return;
          var doc = new DOMParser().parseFromString(text, "text/html");
          var fresh = doc.getElementById("progress");
          var old = document.getElementById("progress");
          if (!fresh || !old) return;
          if (!fresh.hasAttribute("data-live")) {
            // The attempt ended: the whole detail (times, actions) changed once.
            clearInterval(timer);
            var page = doc.querySelector('main[data-page="job"]');
            if (page) { main.replaceWith(document.importNode(page, true)); return; }
          }
          old.replaceWith(document.importNode(fresh, true));
          var status = doc.querySelector('[data-field="status"]');
          var shown = document.querySelector('[data-field="status"]');
          if (status && shown) shown.replaceWith(document.importNode(status, true));
        })
        .catch(function () {});
    }, 2000);
  }
  // The jobs search: folded by the server (a phone's first screen is for the
  // jobs), opened here when the window is wider than a phone. Only at load,
  // so a form someone folded or opened stays as they left it.
  function openFiltersWhenWide() {
    var panel = document.querySelector("details[data-filters-panel]");
    if (panel && window.matchMedia && window.matchMedia("(min-width: 601px)").matches) panel.open = true;
  }
  function boot() { openFiltersWhenWide(); start(); followProgress(); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
