// wacpd console: live updates only. Entries are written with textContent,
// never as HTML; the page works without this script except for the live
// parts.
"use strict";

(function () {
  var maxRows = 500;

  function cell(tr, text, code) {
    var td = document.createElement("td");
    if (code) {
      var c = document.createElement("code");
      c.textContent = text;
      td.appendChild(c);
    } else {
      td.textContent = text;
    }
    tr.appendChild(td);
    return td;
  }

  function follow(src, onEntry, status) {
    var es = new EventSource(src);
    es.onopen = function () { status("Live: new entries appear at the top as they are committed."); };
    es.onerror = function () {
      if (es.readyState === EventSource.CLOSED) {
        status("The live trail is closed (the session may have ended): reload the page.");
      } else {
        status("Reconnecting to the live trail…");
      }
    };
    es.addEventListener("ended", function (ev) {
      es.close();
      status("Live trail ended: " + ev.data + ".");
    });
    es.addEventListener("entry", function (ev) {
      var e;
      try { e = JSON.parse(ev.data); } catch (err) { return; }
      onEntry(e);
    });
    return es;
  }

  function liveTrail() {
    var table = document.getElementById("live");
    var statusEl = document.getElementById("live-status");
    if (!table || !statusEl) { return; }
    var body = table.tBodies[0];
    follow(table.getAttribute("data-src"), function (e) {
      var tr = document.createElement("tr");
      tr.className = "new";
      tr.setAttribute("data-id", e.id);
      cell(tr, e.timestamp);
      cell(tr, e.workspace || "system", true);
      cell(tr, e.actor, true);
      cell(tr, e.event_type);
      var td = cell(tr, "", false);
      var code = document.createElement("code");
      code.className = "wrap";
      code.textContent = JSON.stringify(e.body);
      td.appendChild(code);
      body.insertBefore(tr, body.firstChild);
      while (body.rows.length > maxRows) { body.deleteRow(body.rows.length - 1); }
    }, function (s) { statusEl.textContent = s; });
  }

  function liveQueue() {
    var el = document.getElementById("queue-live");
    if (!el) { return; }
    var gates = { gate_triggered: 1, gate_resolved: 1, gate_timeout: 1 };
    follow(el.getAttribute("data-src"), function (e) {
      if (!gates[e.event_type]) { return; }
      el.textContent = "";
      el.appendChild(document.createTextNode("The queue has changed (" + e.event_type + "). "));
      var a = document.createElement("a");
      a.href = "/queue";
      a.textContent = "Reload the queue";
      el.appendChild(a);
    }, function () {});
  }

  document.addEventListener("DOMContentLoaded", function () {
    liveTrail();
    liveQueue();
  });
})();
