// duraq dashboard: the retries and scheduled views follow the store without a
// reload. The page listens to `/events` (the counts every page shares); when
// the store's count revision passes the one the page was drawn at
// (`#view[data-revision]`), or a minute passes (jobs become due with time
// alone), it fetches itself again, at most once every 2 s, and swaps in the
// fresh `#view` section, count and title. Checked boxes stay checked; the
// search form is left alone, so typing is never interrupted.
(function () {
  "use strict";
  var GAP = 2000;
  function start() {
    if (!document.getElementById("view") || !window.EventSource || !window.fetch) return;
    var base = document.body.getAttribute("data-base") || "";
    var minute = null, latest = -Infinity, last = 0, timer = null, busy = false;
    function shown() {
      var view = document.getElementById("view");
      return view ? Number(view.getAttribute("data-revision")) : NaN;
    }
    function refresh() {
      timer = null;
      busy = true;
      last = Date.now();
      fetch(window.location.href, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (text) { if (text) swap(text); })
        .catch(function () {})
        .then(function () {
          busy = false;
          // Changes that came while the page was being fetched.
          if (latest > shown()) schedule();
        });
    }
    function schedule() {
      if (timer !== null || busy) return;
      timer = setTimeout(refresh, Math.max(0, last + GAP - Date.now()));
    }
    var source = new EventSource(base + "/events");
    source.addEventListener("counts", function (event) {
      var data;
      try { data = JSON.parse(event.data); } catch (e) { return; }
      var newMinute = minute !== null && data.minute_ms !== minute;
      minute = data.minute_ms;
      if (typeof data.revision === "number") latest = Math.max(latest, data.revision);
      if (newMinute || latest > shown()) schedule();
    });
  }
  function swap(text) {
    var doc = new DOMParser().parseFromString(text, "text/html");
    var fresh = doc.getElementById("view");
    var old = document.getElementById("view");
    if (!fresh || !old) return;
    var checked = {};
    old.querySelectorAll("input[data-select]:checked").forEach(function (b) { checked[b.value] = true; });
    fresh.querySelectorAll("input[data-select]").forEach(function (b) { if (checked[b.value]) b.checked = true; });
    old.replaceWith(document.importNode(fresh, true));
    var count = doc.querySelector("[data-view-count]");
    var was = document.querySelector("[data-view-count]");
    if (count && was) was.replaceWith(document.importNode(count, true));
    document.title = doc.title;
    document.dispatchEvent(new Event("duraq:refreshed"));
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
