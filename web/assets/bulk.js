// duraq dashboard: the selection of the jobs page and of the retries and
// scheduled views. The box in the table head checks or clears every row's box
// on the page; the bulk buttons name how many jobs are checked and stay
// disabled while none is. Listeners sit on the document, so a table swapped in
// by the live refresh (views.js, which then sends `duraq:refreshed`) works as
// the one the page loaded with.
(function () {
  "use strict";
  function update(form) {
    var list = form.querySelectorAll("input[data-select]");
    var all = form.querySelector("input[data-select-all]");
    var count = form.querySelector("[data-selected-count]");
    var n = 0;
    list.forEach(function (b) { if (b.checked) n += 1; });
    if (count) count.textContent = "Selected jobs: " + n;
    form.querySelectorAll("button[data-bulk-action]").forEach(function (b) { b.disabled = n === 0; });
    if (all) {
      all.checked = n > 0 && n === list.length;
      all.indeterminate = n > 0 && n < list.length;
    }
  }
  function updateAll() { document.querySelectorAll("form[data-bulk]").forEach(update); }
  document.addEventListener("change", function (event) {
    var box = event.target;
    var form = box && box.closest ? box.closest("form[data-bulk]") : null;
    if (!form) return;
    if (box.matches("input[data-select-all]")) {
      form.querySelectorAll("input[data-select]").forEach(function (b) { b.checked = box.checked; });
    }
    if (box.matches("input[data-select-all], input[data-select]")) update(form);
  });
  document.addEventListener("duraq:refreshed", updateAll);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", updateAll);
  else updateAll();
})();
