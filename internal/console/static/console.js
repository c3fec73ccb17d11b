// Vigil console: keyboard navigation, selection, confirmations and the
// queue's live refresh. The pages work without it; it only saves clicks.
(function () {
  "use strict";
  var $ = function (s, el) { return (el || document).querySelector(s); };
  var $$ = function (s, el) { return Array.prototype.slice.call((el || document).querySelectorAll(s)); };

  // A form with data-confirm asks first; the bulk form names the status
  // and its classification.
  document.addEventListener("submit", function (e) {
    var f = e.target, msg = f.getAttribute("data-confirm");
    if (f.hasAttribute("data-confirm-bulk")) {
      var o = $("#bulkstatus").selectedOptions[0], n = $$("input[name=id]:checked", f).length;
      msg = "Move " + n + " incident(s) to " + o.getAttribute("data-name") + "?" +
        (o.getAttribute("data-class") ? " They will be classified as " + o.getAttribute("data-class") + "." : " They will no longer be classified.");
    }
    if (msg && !window.confirm(msg)) e.preventDefault();
  });
  $$("[data-back]").forEach(function (a) {
    a.addEventListener("click", function (e) { if (history.length > 1) { e.preventDefault(); history.back(); } });
  });

  var table = $("#queue");
  if (!table) return;

  // Selection for the bulk change.
  function selected() { return $$("input[name=id]:checked"); }
  function updateSel() {
    var n = selected().length, c = $("#selcount"), b = $("#bulkapply");
    if (c) c.textContent = n + " selected";
    if (b) b.disabled = n === 0;
  }
  document.addEventListener("change", function (e) {
    if (e.target.id === "selall") {
      $$("input[name=id]").forEach(function (x) { x.checked = e.target.checked; });
    }
    updateSel();
  });
  // A click on a row opens it, except on its checkbox or link.
  table.addEventListener("click", function (e) {
    if (e.target.closest("input,a,label")) return;
    var tr = e.target.closest("tr[data-href]");
    if (tr) location.href = tr.getAttribute("data-href");
  });

  // j/k move, Enter/o open, x select, / search.
  var cur = -1;
  function rows() { return $$("#rows tr"); }
  function focusRow(i) {
    var rs = rows();
    if (!rs.length) return;
    cur = Math.max(0, Math.min(rs.length - 1, i));
    rs.forEach(function (r, k) { r.classList.toggle("cur", k === cur); });
    rs[cur].scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || e.target.closest("input,select,textarea")) return;
    var rs = rows();
    if (e.key === "j") focusRow(cur + 1);
    else if (e.key === "k") focusRow(cur - 1);
    else if ((e.key === "Enter" || e.key === "o") && rs[cur]) location.href = rs[cur].getAttribute("data-href");
    else if (e.key === "x" && rs[cur]) {
      var box = $("input[name=id]", rs[cur]);
      if (box) { box.checked = !box.checked; updateSel(); }
    } else if (e.key === "/") { e.preventDefault(); $("#qbox").focus(); }
    else return;
    e.preventDefault();
  });

  // Poll for new and grown incidents; keep selection and cursor, flash
  // what changed. Paused while the tab is hidden.
  var url = table.getAttribute("data-poll"), every = +table.getAttribute("data-poll-ms") || 10000;
  function poll() {
    if (document.hidden) return;
    fetch(url, { headers: { "X-Console-Fragment": "rows" }, credentials: "same-origin" }).then(function (r) {
      if (r.status === 401) { location.reload(); return null; }
      return r.ok ? r.text() : null;
    }).then(function (html) {
      if (!html) return;
      var t = document.createElement("table");
      t.innerHTML = html;
      var fresh = t.querySelector("tbody"), old = $("#rows");
      if (!fresh || !old) return;
      var before = {}, checked = {}, curID = rows()[cur] ? rows()[cur].getAttribute("data-id") : null;
      rows().forEach(function (r) { before[r.getAttribute("data-id")] = r.getAttribute("data-rev"); });
      selected().forEach(function (x) { checked[x.value] = true; });
      var changed = false;
      $$("tr", fresh).forEach(function (r) {
        var id = r.getAttribute("data-id");
        if (before[id] !== r.getAttribute("data-rev")) { r.classList.add("fresh"); changed = true; }
        var box = $("input[name=id]", r);
        if (box && checked[id]) box.checked = true;
      });
      if (!changed && $$("tr", fresh).length === rows().length) return;
      old.parentNode.replaceChild(fresh, old);
      if (curID) rows().forEach(function (r, k) { if (r.getAttribute("data-id") === curID) focusRow(k); });
      updateSel();
    }).catch(function () {});
  }
  // The org's changes arrive as server-sent events: each (a burst of
  // them, once) fetches the rows again. Polling stays as a slow fallback
  // for when the stream is refused or lost for good.
  var live = table.getAttribute("data-live"), pending = null;
  if (live && window.EventSource) {
    var kick = function () {
      if (!pending) pending = setTimeout(function () { pending = null; poll(); }, 250);
    };
    var es = new EventSource(live);
    ["incident.created", "incident.grew", "incident.merged", "incident.status_changed",
      "incident.classified", "incident.assigned", "incident.tagged"].forEach(function (t) { es.addEventListener(t, kick); });
    every = Math.max(every, 60000);
    document.addEventListener("visibilitychange", function () { if (!document.hidden) kick(); });
  }
  setInterval(poll, every);
})();
