// herald's live page: keeps the server-rendered table current from the
// bridge's event stream (/events), without reloading. The page works
// without this script; it only adds the live updates, the filter as you
// type, and Enter on a row to open its timeline.
"use strict";
(function () {
  const me = document.currentScript;
  const liveState = document.getElementById("live-state");
  const say = (text) => { if (liveState) liveState.textContent = text; };

  // follow listens to an event stream and calls up() when it is heard
  // from, down() when it breaks or goes silent: the bridge sends at least
  // a ping every keep-alive interval, and a hung bridge (or packets
  // dropped with no reset) keeps the connection open while sending
  // nothing, so silence for about three intervals counts as down.
  // It returns a function that stops the watch, for a stream closed.
  function follow(es, up, down) {
    const every = Number(me.dataset.keepalive || 2000);
    let heard = Date.now(), isUp = true;
    const alive = () => { heard = Date.now(); if (!isUp) { isUp = true; up(); } };
    const dead = () => { if (isUp) { isUp = false; down(); } };
    for (const name of ["group", "status", "count", "cursor", "reload", "ping"]) es.addEventListener(name, alive);
    es.onopen = alive;
    es.onerror = dead;
    const watch = setInterval(() => { if (Date.now() - heard > 3 * every + 500) dead(); }, 500);
    return () => clearInterval(watch);
  }

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v);
    }
    for (const k of kids) e.append(k);
    return e;
  }

  function stamp(t) {
    const d = new Date(t);
    if (isNaN(d) || d.getUTCFullYear() < 2) return "";
    return d.toISOString().replace("T", " ").slice(0, 19);
  }

  function dur(ns) {
    const s = Math.floor(ns / 1e9);
    if (s <= 0) return "";
    const p2 = (n) => String(n).padStart(2, "0");
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m" + p2(s % 60) + "s";
    if (s < 48 * 3600) return Math.floor(s / 3600) + "h" + p2(Math.floor(s / 60) % 60) + "m";
    return Math.floor(s / 86400) + "d" + p2(Math.floor(s / 3600) % 24) + "h";
  }

  // row builds a group's row as the server's template does.
  function row(r) {
    const tr = el("tr", { class: "group" + (r.state === "stale" ? " stale" : ""), tabindex: "0", "data-group": r.group, "data-state": r.state });
    const link = el("a", { href: "timeline?group=" + encodeURIComponent(r.group) }, r.group);
    tr.append(el("th", { scope: "row" }, link));
    tr.append(el("td", { "data-k": "recipe" }, r.recipe || ""));
    const owner = el("td", { "data-k": "owner" });
    if (r.node) {
      if (r.owner) owner.append(r.owner + " ");
      owner.append(el("small", {}, r.node));
    } else owner.append("—");
    tr.append(owner);
    tr.append(el("td", { "data-k": "term", class: "num" }, r.term ? String(r.term) : ""));
    const since = stamp(r.since);
    tr.append(el("td", { "data-k": "since" }, since ? (r.since_seen ? "" : "≤ ") + since : ""));
    const st = el("td", { "data-k": "state" }, el("span", { class: "state state-" + r.state.replace(" ", "-"), title: r.why || null }, r.state));
    if (r.why) st.append(" ", el("small", {}, r.why));
    tr.append(st);
    // The time without an owner goes on growing between updates: the
    // ticker below counts from when the bridge's figure arrived (the
    // browser's clock may differ from the bridge's; elapsed time does not).
    const atLeast = r.ownerless > 0 && !r.ownerless_seen;
    tr.append(el("td", { "data-k": "ownerless", class: "num", "data-ns": r.ownerless > 0 ? String(r.ownerless) : null,
      "data-min": atLeast ? "1" : null,
      "data-at": r.ownerless > 0 ? String(Date.now()) : null }, (atLeast ? "≥ " : "") + dur(r.ownerless)));
    tr.append(el("td", { "data-k": "changes", class: "num" }, String(r.changes_last_hour || 0)));
    return tr;
  }

  const table = document.getElementById("groups");
  if (table) {
    const body = table.tBodies[0];
    const loaded = String(Date.now());
    for (const td of body.querySelectorAll("td[data-ns]")) td.dataset.at = loaded;
    setInterval(() => {
      for (const td of body.querySelectorAll("td[data-ns]")) {
        td.textContent = (td.dataset.min ? "≥ " : "") + dur(Number(td.dataset.ns) + (Date.now() - Number(td.dataset.at)) * 1e6);
      }
    }, 1000);
    const q = document.getElementById("q");
    const limit = Number(me.dataset.limit || 500);
    const shown = (g) => !q || g.includes(q.value);
    const find = (g) => [...body.rows].find((tr) => tr.dataset.group === g);

    function put(r) {
      const old = find(r.group);
      if (r.gone) { if (old) old.remove(); return; }
      const tr = row(r);
      tr.hidden = !shown(r.group);
      if (old) {
        old.replaceWith(tr);
      } else {
        // Rows the filter hides must not keep out a group that matches:
        // one makes room for it when the table is full. Else the page
        // lists the first groups in order: one that sorts among them
        // pushes out the last.
        if (body.rows.length >= limit) {
          let out = tr.hidden ? null : [...body.rows].reverse().find((x) => x.hidden);
          const last = body.rows[body.rows.length - 1];
          if (!out && last.dataset.group > r.group && (!tr.hidden || last.hidden)) out = last;
          if (!out) return;
          out.remove();
        }
        const after = [...body.rows].find((x) => x.dataset.group > r.group);
        body.insertBefore(tr, after || null);
      }
      tr.classList.add("flash");
      setTimeout(() => tr.classList.remove("flash"), 1200);
    }

    function status(h) {
      const set = (id, v) => { const e = document.getElementById(id); if (e) e.textContent = v; };
      set("h-role", h.role);
      set("h-shard", h.shard || "all groups");
      set("h-session", h.session + (h.session_id ? " (" + h.session_id + ")" : ""));
      set("h-groups", String(h.groups));
      set("h-published", String(h.published));
      const sinks = document.getElementById("h-sinks");
      if (sinks) {
        sinks.textContent = "";
        Object.keys(h.sinks || {}).sort().forEach((n, i) => {
          const s = h.sinks[n];
          if (i) sinks.append(", ");
          sinks.append(n + " ", el("span", { class: s.healthy ? "ok" : "bad" }, s.healthy ? "healthy" : "unhealthy"));
          if (s.backlog) sinks.append(" (backlog " + s.backlog + ")");
        });
      }
      const lists = document.getElementById("h-lists");
      if (lists) {
        const errs = h.list_errors || {};
        lists.textContent = "";
        Object.keys(errs).sort().forEach((r, i) => {
          if (i) lists.append("; ");
          lists.append(el("span", { class: "bad" }, r), " " + errs[r]);
        });
        document.getElementById("h-lists-row").hidden = Object.keys(errs).length === 0;
      }
    }

    if (q) {
      let typing = null;
      q.addEventListener("input", () => {
        for (const tr of body.rows) tr.hidden = !shown(tr.dataset.group);
        const u = new URL(location.href);
        if (q.value) u.searchParams.set("q", q.value); else u.searchParams.delete("q");
        history.replaceState(null, "", u);
        clearTimeout(typing);
        if (!complete || !q.value.includes(readWith)) typing = setTimeout(refilter, 250);
      });
    }
    // The rows listed are only the first (limit) of those the filter they
    // were read with (readWith) matched: a typed filter may match groups
    // not listed, unless the list is complete and the filter narrows it.
    // Then, once typing pauses, the bridge's rows for it replace the
    // table, and the stream follows from where they were read.
    let asked = 0, readWith = me.dataset.q || "", complete = Number(me.dataset.matched || 0) <= limit;
    function refilter() {
      const n = ++asked, v = q.value;
      fetch("./?q=" + encodeURIComponent(v), { cache: "no-store" })
        .then((r) => r.text())
        .then((html) => {
          const doc = new DOMParser().parseFromString(html, "text/html");
          const rows = doc.querySelector("#groups tbody"), s = doc.querySelector("script[data-cursor]");
          if (n !== asked || !rows || !s) return; // a later filter's answer wins
          const at = String(Date.now());
          for (const td of rows.querySelectorAll("td[data-ns]")) td.dataset.at = at;
          body.replaceChildren(...rows.childNodes);
          for (const tr of body.rows) tr.hidden = !shown(tr.dataset.group);
          const c = doc.getElementById("count"), mine = document.getElementById("count");
          if (c && mine) mine.textContent = c.textContent;
          readWith = v;
          complete = Number(s.dataset.matched || 0) <= limit;
          listen(s.dataset.cursor, v);
          live = true; mark(false); sayLive(); // the bridge just answered
        })
        .catch(() => {}); // the stream's watch says when the bridge is out of reach
    }
    body.addEventListener("keydown", (ev) => {
      const tr = ev.target.closest && ev.target.closest("tr.group");
      if (ev.key === "Enter" && tr && ev.target === tr) location.href = tr.querySelector("a").href;
    });

    // The stream resumes where it stopped: each batch ends with an id the
    // browser sends back when it reconnects by itself. A bridge that
    // restarted meanwhile does not know that place and asks for a reload.
    let es = null, unwatch = null;
    function listen(cursor, filter) {
      if (es) { es.close(); unwatch(); }
      es = new EventSource("events?since=" + encodeURIComponent(cursor || "") + "&q=" + encodeURIComponent(filter || ""));
      es.addEventListener("group", (ev) => put(JSON.parse(ev.data)));
      es.addEventListener("status", (ev) => status(JSON.parse(ev.data)));
      es.addEventListener("count", (ev) => {
        const c = JSON.parse(ev.data), e = document.getElementById("count");
        complete = c.matched <= c.limit;
        if (e) e.textContent = c.matched > c.limit ? "Showing " + c.limit + " of " + c.matched + " groups; filter to narrow."
          : c.matched + " group" + (c.matched === 1 ? "" : "s") + ".";
      });
      es.addEventListener("reload", () => location.reload());
      es.addEventListener("group", sayLive);
      unwatch = follow(es, () => { live = true; mark(false); sayLive(); },
        () => { live = false; mark(true); say("Live updates interrupted; reconnecting… the rows and the bridge's state may be out of date."); });
    }
    // While the stream is down or silent nothing on the page is
    // confirmed: the rows and the bridge's own header are greyed, as stale
    // rows are, until the stream is heard from again.
    const bridge = document.getElementById("bridge");
    const note = document.getElementById("h-interrupted");
    const mark = (down) => {
      table.classList.toggle("interrupted", down);
      if (bridge) bridge.classList.toggle("interrupted", down);
      if (note) note.hidden = !down;
    };
    // Live, the caption also says how many rows show an owner not
    // confirmed now, as the server's caption does (liveState).
    let live = true;
    const unconfirmed = new Set(["stale", "unknown", "unreadable", "pending"]);
    const sayLive = () => {
      if (!live) return;
      const n = [...body.rows].filter((tr) => unconfirmed.has(tr.dataset.state)).length;
      say(n === 0 ? "Updated live." : n === 1 ? "Updated live, but 1 group is not confirmed now (see its state)."
        : "Updated live, but " + n + " groups are not confirmed now (see their state).");
    };
    listen(me.dataset.cursor, me.dataset.q);
  }

  const tl = document.getElementById("timeline");
  if (tl) {
    const g = tl.dataset.group, q = tl.dataset.q;
    // Refreshes are numbered: one answered late (a slow network, a busy
    // bridge) after a later one is older than what is drawn, and drew an
    // owner gone since as holding now until the next change. An answer
    // is drawn only if no later refresh's was.
    // A refresh that fails (a proxy's 502, a dropped connection) is
    // tried again, the drawing greyed meanwhile: the change that asked
    // for it comes only once, and the drawing stayed as it was, an owner
    // gone since drawn as holding now, until the group's next change.
    let pending = null, asked = 0, shown = 0, up = true;
    const failed = (n) => {
      if (n !== asked) return; // a later refresh is under way
      tl.classList.add("interrupted");
      say("Live updates interrupted; reconnecting… what is drawn may be out of date.");
      if (!pending) pending = setTimeout(refresh, 1000);
    };
    const refresh = () => {
      pending = null;
      const n = ++asked;
      fetch(location.href, { cache: "no-store" })
        .then((r) => { if (!r.ok) throw new Error(r.statusText); return r.text(); })
        .then((html) => {
          const fresh = new DOMParser().parseFromString(html, "text/html").getElementById("timeline");
          if (!fresh) throw new Error("no timeline");
          if (n < shown) return;
          shown = n;
          tl.replaceChildren(...fresh.childNodes);
          if (n === asked && up) { tl.classList.remove("interrupted"); say("Updated live."); }
        })
        .catch(() => failed(n));
    };
    // From where the drawing was made: a change before the stream opened
    // is sent, not lost (as on the group list). Only the rows of groups
    // whose path contains the group's, or q, come.
    const es = new EventSource("events?since=" + encodeURIComponent(me.dataset.cursor || "") + "&q=" + encodeURIComponent(g || q || ""));
    es.addEventListener("reload", () => { if (!pending) pending = setTimeout(refresh, 200); });
    es.addEventListener("group", (ev) => {
      const r = JSON.parse(ev.data);
      if ((g && r.group === g) || (!g && r.group.includes(q))) {
        if (!pending) pending = setTimeout(refresh, 200);
      }
    });
    follow(es, () => { up = true; tl.classList.remove("interrupted"); say("Updated live."); },
      () => { up = false; tl.classList.add("interrupted"); say("Live updates interrupted; reconnecting… what is drawn may be out of date."); });
  }
})();
