// evalctl report: the scenario table (filters, search, sort) and one result's detail.
// Data comes from the page's JSON blocks (type application/json); every value is put on the page with
// textContent or a fixed attribute, never parsed as HTML.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const index = JSON.parse($("report-index").textContent);
  const rows = index.rows;
  const ELIDED = "__evalctl_elided__";

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else e.setAttribute(k, String(v));
    }
    for (const kid of kids) {
      if (kid === null || kid === undefined) continue;
      e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return e;
  }

  const money = (v) => (v === null || v === undefined ? "n/a" : Math.abs(v) < 1 ? "$" + v.toFixed(4) : "$" + v.toFixed(2));
  const label = (r) => r.name + (index.trials > 1 ? " #" + r.trial : "");
  const badge = (verdict) => el("span", { class: "badge " + verdict.replace("/", "") }, verdict.toUpperCase());

  // --- the table -----------------------------------------------------------------------------
  // [header, cell, sort key, shown while a result is open]
  const columns = [
    ["", (r) => badge(r.verdict), (r) => r.verdict, true],
    ["scenario", (r) => label(r), (r) => r.name + "\u0000" + String(r.trial).padStart(6, "0"), true],
    ["id", (r) => r.id, (r) => r.id, false],
    ["group", (r) => r.group, (r) => r.group, false],
    ["failing signals", (r) => r.failed.join(", ") + (r.stalled ? (r.failed.length ? ", " : "") + "stalled" : ""), (r) => r.failed.join(",")],
    ["stop", (r) => r.stop, (r) => r.stop, true],
    ["turns", (r) => r.turns, (r) => r.turns, false],
    ["tool calls", (r) => r.calls, (r) => r.calls, false],
    ["seconds", (r) => r.dur.toFixed(2), (r) => r.dur, false],
    index.priced
      ? ["cost", (r) => money(r.cost), (r) => r.cost || 0, false]
      : ["tokens", (r) => r.tokens, (r) => r.tokens, false],
  ];
  const trs = [];
  let selected = -1;

  function buildTable() {
    const table = $("scenario-table");
    const headRow = el("tr");
    columns.forEach(([name, , key, keep]) => {
      const th = el("th", { class: keep ? null : "opt", tabindex: 0, title: "sort" }, name);
      th.addEventListener("click", () => sortBy(key, th));
      headRow.append(th);
    });
    table.append(el("thead", {}, headRow));
    const body = el("tbody", { id: "scenario-rows" });
    for (const r of rows) {
      const tr = el("tr", { class: "row " + r.verdict.replace("/", ""), tabindex: 0, "data-i": r.i, "data-name": r.name });
      for (const [, cell, , keep] of columns) tr.append(el("td", { class: keep ? null : "opt" }, cell(r)));
      if (r.error) tr.title = r.error;
      tr.addEventListener("click", () => openResult(r.i));
      tr.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter") openResult(r.i);
      });
      trs[r.i] = tr;
      body.append(tr);
    }
    table.append(body);
  }

  let sortState = { key: null, dir: 1 };
  function sortBy(key, th) {
    sortState = { key, dir: sortState.key === key ? -sortState.dir : 1 };
    const body = $("scenario-rows");
    const order = rows.slice().sort((a, b) => {
      const x = key(a), y = key(b);
      return (x < y ? -1 : x > y ? 1 : 0) * sortState.dir;
    });
    for (const r of order) body.append(trs[r.i]);
    for (const other of th.parentNode.children) other.removeAttribute("aria-sort");
    th.setAttribute("aria-sort", sortState.dir > 0 ? "ascending" : "descending");
  }

  const filters = { failing: $("f-failing"), signal: $("f-signal"), stop: $("f-stop"), group: $("f-group"), q: $("f-search") };
  function applyFilters() {
    const q = filters.q.value.trim().toLowerCase();
    let shown = 0;
    for (const r of rows) {
      const hay = (r.name + " " + r.id + " " + r.group + " " + r.stop + " " + (r.error || "")).toLowerCase();
      const ok =
        (!filters.failing.checked || r.verdict === "fail") &&
        (!filters.signal.value || r.bad.includes(filters.signal.value)) &&
        (!filters.stop.value || r.stop === filters.stop.value) &&
        (!filters.group.value || r.group === filters.group.value) &&
        (!q || hay.includes(q));
      trs[r.i].hidden = !ok;
      shown += ok ? 1 : 0;
    }
    $("f-count").textContent = "showing " + shown + " of " + rows.length;
  }

  // --- one result ----------------------------------------------------------------------------
  function shown(value) {
    if (value && typeof value === "object" && ELIDED in value) {
      return value[ELIDED] + "\n… (" + value.size + " characters in all: see the raw file)";
    }
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }

  function section(title, ...kids) {
    return el("section", { class: "part" }, el("h3", {}, title), ...kids);
  }

  function signalsPart(d) {
    const body = el("tbody");
    for (const [name, value, status, gating] of d.signals) {
      body.append(el("tr", { class: "sig " + status.replace("/", "") }, el("td", {}, name), el("td", {}, value), el("td", {}, status), el("td", {}, gating ? "gating" : "")));
    }
    return section("Signals and success_breakdown", el("table", { class: "signals" }, el("thead", {}, el("tr", {}, el("th", {}, "signal"), el("th", {}, "value"), el("th", {}, "breakdown"), el("th", {}, ""))), body));
  }

  function trustPart(d) {
    if (!d.trust || !(ELIDED in d.trust || d.trust.length)) return null;
    const lines = ELIDED in d.trust ? [shown(d.trust)] : d.trust;
    const box = el("div", { class: "db failed" });
    for (const line of lines) box.append(el("div", { class: line.startsWith("  ") ? "db-line" : "db-head" }, line));
    return section("Cause and caller fidelity (as evalctl diff says)", box);
  }

    function dbPart(d) {
    const lines = d.db && typeof d.db === "object" && ELIDED in d.db ? [shown(d.db)] : d.db;
    const box = el("div", { class: "db" + (d.db_failed ? " failed" : "") });
    for (const line of lines) box.append(el("div", { class: line.startsWith("  ") ? "db-line" : "db-head" }, line));
    const kids = [box];
    if (d.unmatched && (ELIDED in d.unmatched || d.unmatched.length)) {
      const lines = ELIDED in d.unmatched ? [shown(d.unmatched)] : d.unmatched;
      const box = el("div", { class: "db failed" }, el("div", { class: "db-head" }, "is_action_match: no action matches"));
      for (const line of lines) box.append(el("div", { class: "db-line" }, "  " + line));
      kids.push(box);
    }
    if (d.gold) kids.push(el("p", { class: "gold" }, "conversation: " + d.gold));
    return section("DB (as evalctl diff explains it)", ...kids);
  }

  function chatPart(d) {
    const box = el("div", { class: "chat" });
    for (const e of d.chat) {
      if (e.k === "say") {
        box.append(el("div", { class: "msg " + (e.r === "agent" ? "agent" : e.r === "user" ? "user" : "other") }, el("div", { class: "who" }, e.r + (e.t === null ? "" : " · " + e.t.toFixed(2) + " s")), el("div", { class: "text" }, shown(e.x))));
      } else if (e.k === "tool") {
        const status = e.ok === true ? "ok" : e.ok === false ? "error" : "";
        const call = el("div", { class: "tool " + (e.r === "user" ? "user" : "agent") });
        call.append(el("div", { class: "tool-head" }, el("span", { class: "tool-name" }, e.n), " ", el("span", { class: "who" }, "tool call by " + e.r), status ? el("span", { class: "badge " + (status === "ok" ? "pass" : "fail") }, status) : null));
        if (e.a !== null && e.a !== undefined) call.append(el("pre", { class: "args" }, shown(e.a)));
        if (e.res !== null && e.res !== undefined) call.append(el("details", { class: "result" }, el("summary", {}, "result"), el("pre", {}, shown(e.res))));
        box.append(call);
      } else {
        box.append(el("div", { class: "note" }, shown(e.x)));
      }
    }
    return section("Conversation", box);
  }

  // an audio session: both waveforms on the media timeline, each side's speech, the turns' figures
  function voicePart(d) {
    const v = d.voice;
    if (!v) return null;
    const NS = "http://www.w3.org/2000/svg";
    const W = 960, H = 140, lane = { user: 10, agent: 80 }, laneH = 50;
    const total = Math.max(1, v.media_ms);
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("class", "voice-timeline");
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("width", String(W));
    const add = (tag, attrs, text) => {
      const e = document.createElementNS(NS, tag);
      for (const [k, val] of Object.entries(attrs)) e.setAttribute(k, String(val));
      if (text !== undefined) e.textContent = text;
      svg.append(e);
      return e;
    };
    for (const u of v.utterances) {
      for (const [a, b] of u.seg) {
        add("rect", { class: "speech " + u.r, x: (W * a) / total, y: lane[u.r === "agent" ? "agent" : "user"], width: Math.max(1, (W * (b - a)) / total), height: laneH });
      }
    }
    for (const role of ["user", "agent"]) {
      const peaks = v.waves[role] || [];
      if (!peaks.length) continue;
      const mid = lane[role] + laneH / 2;
      let path = "";
      peaks.forEach((p, i) => {
        const x = ((i + 0.5) * W) / peaks.length;
        const h = Math.max(0.5, p * (laneH / 2));
        path += "M" + x.toFixed(1) + " " + (mid - h).toFixed(1) + "V" + (mid + h).toFixed(1);
      });
      add("path", { class: "wave " + role, d: path, "data-role": role });
      add("text", { class: "lane", x: 2, y: lane[role] + 11 }, role === "user" ? "caller" : "agent");
    }
    const players = el("div", { class: "players" });
    for (const [role, href] of Object.entries(v.audio)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue; // only the run's own files
      players.append(el("label", {}, (role === "user" ? "caller" : "agent") + " ", el("audio", { controls: true, preload: "metadata", src: href, "data-role": role })));
    }
    const ms = (x) => (x === null || x === undefined ? "-" : Math.round(x) + " ms");
    const body = el("tbody");
    for (const t of v.turns) {
      const barge = t.barge ? (t.barge.yielded ? "yielded after " : "talked on ") + ms(t.barge.yield_ms) : "";
      body.append(el("tr", { class: t.matched === false ? "unmatched" : null }, el("td", {}, t.turn), el("td", {}, ms(t.latency)), el("td", {}, ms(t.stamped)), el("td", {}, ms(t.ttfa)), el("td", {}, ms(t.overlap)), el("td", {}, barge), el("td", {}, t.heard === null || t.heard === undefined ? "" : shown(t.heard))));
    }
    const table = el("table", { class: "voice-turns" }, el("thead", {}, el("tr", {}, ...["turn", "latency", "stamped", "first audio", "overlap", "barge-in", "heard"].map((x) => el("th", {}, x)))), body);
    return section("Audio (media time " + (total / 1000).toFixed(1) + " s)", svg, players, table);
  }

  function judgePart(d) {
    if (!d.judge && !d.judge_error) return null;
    const kids = [];
    const j = d.judge || {};
    if (j.note) kids.push(el("p", { class: "warn" }, j.note));
    if (j.model) {
      kids.push(el("p", {}, "model " + j.model + ": score " + (j.score === null ? "n/a" : j.score) + ", passed " + j.passed + " (threshold " + j.threshold + ")"));
      if (j.reason) kids.push(el("p", { class: "reason" }, shown(j.reason)));
      for (const c of j.claims) kids.push(el("div", { class: "claim " + (c.passed ? "pass" : "fail") }, el("b", {}, shown(c.assertion)), ": " + (c.passed ? "holds" : "does not hold") + " — ", shown(c.reason)));
    }
    if (d.judge_error) kids.push(el("p", { class: "warn" }, "judge error: " + d.judge_error));
    return section("Judge", ...kids);
  }

  function usagePart(d) {
    const u = d.usage;
    if (!u || !Object.keys(u.roles).length) return null;
    const body = el("tbody");
    for (const [role, c] of Object.entries(u.roles)) {
      body.append(el("tr", {}, el("td", {}, role), el("td", {}, c.models.join(", ")), el("td", {}, c.prompt_tokens), el("td", {}, c.completion_tokens), el("td", {}, c.calls), el("td", {}, index.priced ? money(c.cost) + (c.unpriced.length ? " (unpriced: " + c.unpriced.join(", ") + ")" : "") : "")));
    }
    const total = index.priced ? el("p", {}, "cost of this result: " + money(u.cost)) : null;
    return section("Tokens and cost", el("table", {}, el("thead", {}, el("tr", {}, ...["role", "models", "prompt", "completion", "requests", "cost"].map((t) => el("th", {}, t)))), body), total);
  }

  function filesPart(d) {
    const list = el("ul", { class: "files" });
    for (const [name, href] of d.files) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue; // only relative links to the run's files
      list.append(el("li", {}, el("a", { href: href }, name)));
    }
    return section("Raw artifacts", list);
  }

  function openResult(i) {
    const r = rows[i];
    const d = JSON.parse($("d-" + i).textContent);
    const box = $("detail");
    const facts = [r.id && "id " + r.id, r.group, "stop " + r.stop, r.turns + " agent turns", r.calls + " tool calls", r.dur.toFixed(2) + " s"];
    const parts = [
      el("h2", {}, badge(r.verdict), " ", label(r)),
      el("p", { class: "facts" }, facts.filter(Boolean).join(" · ")),
      d.description ? el("p", { class: "description" }, shown(d.description)) : null,
      d.error ? el("p", { class: "warn" }, "error: " + shown(d.error)) : null,
      trustPart(d),
      signalsPart(d),
      dbPart(d),
      judgePart(d),
      voicePart(d),
      chatPart(d),
      usagePart(d),
      filesPart(d),
    ];
    box.replaceChildren(...parts.filter((p) => p !== null));
    box.hidden = false;
    $("results").classList.add("open");
    if (selected >= 0) trs[selected].classList.remove("selected");
    trs[i].classList.add("selected");
    selected = i;
    try {
      history.replaceState(null, "", "#r" + i);
    } catch (err) {
      /* some file:// settings refuse it; the detail is open anyway */
    }
    box.scrollTop = 0;
    $("scenarios").scrollIntoView({ block: "start" });
  }

  buildTable();
  for (const f of Object.values(filters)) {
    f.addEventListener("input", applyFilters);
    f.addEventListener("change", applyFilters);
  }
  for (const dot of document.querySelectorAll("circle.dot")) {
    dot.addEventListener("click", () => openResult(Number(dot.getAttribute("data-i"))));
  }
  applyFilters();
  function fromHash() {
    const m = /^#r(\d+)$/.exec(location.hash);
    if (m && rows[Number(m[1])] && Number(m[1]) !== selected) openResult(Number(m[1]));
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();
  document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));
})();
