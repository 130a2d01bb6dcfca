// Click a column heading of the measurements table to sort by it (numbers as numbers).
// Our own few lines: the site works offline, so no table library is fetched.
(function () {
  function key(cell) {
    var text = cell.textContent.trim();
    var num = parseFloat(text.replace(/[^0-9.\-]/g, ""));
    return isNaN(num) || /^[A-Za-z]/.test(text) ? text.toLowerCase() : num;
  }
  function attach() {
    if (!/measurements(\.html|\/|\/index\.html)?$/.test(location.pathname)) return;
    document.querySelectorAll("article table").forEach(function (table) {
      table.querySelectorAll("thead th").forEach(function (th, col) {
        th.style.cursor = "pointer";
        th.title = "sort";
        th.addEventListener("click", function () {
          var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
          var asc = th.getAttribute("data-sort") !== "asc";
          rows.sort(function (a, b) {
            var x = key(a.cells[col]), y = key(b.cells[col]);
            return (x > y ? 1 : x < y ? -1 : 0) * (asc ? 1 : -1);
          });
          th.setAttribute("data-sort", asc ? "asc" : "desc");
          rows.forEach(function (r) { body.appendChild(r); });
        });
      });
    });
  }
  if (typeof document$ !== "undefined") { document$.subscribe(attach); } else { document.addEventListener("DOMContentLoaded", attach); }
})();
