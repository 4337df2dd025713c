// duraq dashboard: the jobs page's selection. The box in the table head
// checks or clears every row's box on the page; the bulk buttons name how many
// jobs are checked and stay disabled while none is.
(function () {
  "use strict";
  function start() {
    var form = document.querySelector("form[data-bulk]");
    if (!form) return;
    var all = form.querySelector("input[data-select-all]");
    var boxes = function () { return form.querySelectorAll("input[data-select]"); };
    var count = form.querySelector("[data-selected-count]");
    function update() {
      var list = boxes();
      var n = 0;
      list.forEach(function (b) { if (b.checked) n += 1; });
      if (count) count.textContent = "Selected jobs: " + n;
      form.querySelectorAll("button[data-bulk-action]").forEach(function (b) { b.disabled = n === 0; });
      if (all) {
        all.checked = n > 0 && n === list.length;
        all.indeterminate = n > 0 && n < list.length;
      }
    }
    if (all) {
      all.addEventListener("change", function () {
        boxes().forEach(function (b) { b.checked = all.checked; });
        update();
      });
    }
    boxes().forEach(function (b) { b.addEventListener("change", update); });
    update();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
