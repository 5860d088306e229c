/* saddlebench report: sortable, filterable tables and KaTeX math, offline (no network).
 * Every <table class="sortable">: a click on a header sorts its body rows by that column
 * (numbers by value, "−" read as minus, empty and "–" cells last; again: the other way);
 * tables with more than FILTER_ROWS rows get a filter box above them (rows must contain
 * every word typed). Math between \( and \) is typeset by the vendored KaTeX. A link into
 * a collapsed section opens it. */
(function () {
  "use strict";
  var FILTER_ROWS = 10;

  function cellText(row, column) {
    var cell = row.cells[column];
    return cell ? cell.textContent.trim() : "";
  }

  function sortKey(text) {
    if (text === "" || text === "–" || text === "-") return null;
    var match = text.replace(/\u2212/g, "-").match(/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?/i);
    return match ? parseFloat(match[0]) : text.toLowerCase();
  }

  function compare(a, b) {
    if (a === null || b === null) return a === b ? 0 : (a === null ? 1 : -1);
    if (typeof a === typeof b) return a < b ? -1 : (a > b ? 1 : 0);
    return typeof a === "number" ? -1 : 1;  // numbers before text
  }

  function sortBy(table, header, column) {
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("thead th").forEach(function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows).map(function (row, index) {
      return { row: row, key: sortKey(cellText(row, column)), index: index };
    });
    rows.sort(function (a, b) {
      var order = compare(a.key, b.key);
      if (a.key !== null && b.key !== null && !ascending) order = -order;
      return order || a.index - b.index;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
  }

  function addFilter(table) {
    var input = document.createElement("input");
    input.type = "search";
    input.className = "table-filter";
    input.placeholder = "filter " + table.tBodies[0].rows.length + " rows…";
    input.setAttribute("aria-label", "filter the rows of the table below");
    input.addEventListener("input", function () {
      var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var text = row.textContent.toLowerCase();
        row.hidden = !words.every(function (w) { return text.indexOf(w) >= 0; });
      });
    });
    var box = table.parentElement.classList.contains("scroll") ? table.parentElement : table;
    box.parentElement.insertBefore(input, box);
  }

  function enhance(table) {
    if (!table.tHead || !table.tBodies.length) return;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      th.title = "sort by " + th.textContent.trim();
      th.addEventListener("click", function () { sortBy(table, th, column); });
    });
    if (table.tBodies[0].rows.length > FILTER_ROWS) addFilter(table);
  }

  // open every <details> around the element the URL's #fragment names (a link into a
  // collapsed section of a paper page), then bring it into view
  function reveal() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (!target) return;
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") node.open = true;
    }
    target.scrollIntoView();
  }

  // the contents' button: open (or close again) every section of the page
  function toggleSections(button) {
    button.addEventListener("click", function () {
      var open = button.textContent.indexOf("open") === 0;
      document.querySelectorAll("details.section").forEach(function (d) { d.open = open; });
      button.textContent = (open ? "close" : "open") + " every section";
    });
  }

  window.addEventListener("hashchange", reveal);
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("table.sortable").forEach(enhance);
    document.querySelectorAll("button.toggle-sections").forEach(toggleSections);
    reveal();
    if (window.renderMathInElement) {
      window.renderMathInElement(document.body, {
        delimiters: [{ left: "\\(", right: "\\)", display: false }],
        throwOnError: false
      });
    }
  });
})();
