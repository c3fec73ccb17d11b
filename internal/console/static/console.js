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

  // The rule editor's two editors of the conditions, the rows and the
  // JSON, kept in step: the console writes one from the other (the same
  // code that reads a form sent without script), a moment after a change.
  var rf = $("#ruleform");
  if (rf && $("#conditions")) {
    var wait = null, seq = 0;
    var sync = function (from) {
      if (from === "json") {
        try { JSON.parse($("textarea[name=conditions]", rf).value); } catch (err) { return; } // still being typed
      }
      var body = new URLSearchParams(new FormData(rf));
      body.set("from", from);
      var mine = ++seq;
      fetch("/rules/conditions", { method: "POST", body: body, credentials: "same-origin" }).then(function (r) {
        if (r.status === 401) { location.reload(); return null; }
        return r.ok ? r.text() : null;
      }).then(function (html) {
        if (!html || mine !== seq) return; // a later change is on its way
        var box = document.createElement("div");
        box.innerHTML = html;
        var cur = $("#conditions"), fresh = $("#conditions", box);
        if (!fresh) return;
        if (from === "rows") $("textarea[name=conditions]", cur).value = $("textarea[name=conditions]", fresh).value;
        else $("#condform", cur).replaceWith($("#condform", fresh));
        $("input[name=conditions_shown]", cur).value = $("input[name=conditions_shown]", fresh).value;
        cur.setAttribute("data-synced", mine);
      }).catch(function () {});
    };
    var later = function (from) {
      clearTimeout(wait);
      wait = setTimeout(function () { sync(from); }, 300);
    };
    var edited = function (e) {
      if (e.target.closest("#condform")) later("rows");
      else if (e.target.name === "conditions") later("json");
    };
    rf.addEventListener("input", edited);
    rf.addEventListener("change", edited);
    // Adding and removing a row need no page.
    rf.addEventListener("click", function (e) {
      var b = e.target.closest("#cond-add, .cond-del");
      if (!b) return;
      e.preventDefault();
      if (b.id === "cond-add") {
        $("#cond-rows").appendChild($("#cond-blank").content.cloneNode(true));
        $("#cond-rows .cond-row:last-child input[name=cond_field]").focus();
      } else {
        b.closest(".cond-row").remove();
      }
      later("rows");
    });
  }

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
