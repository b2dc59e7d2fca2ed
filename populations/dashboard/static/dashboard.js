// selfplay league dashboard: reads the JSON API (or, in a static export, the answers embedded
// in #dashboard-export) and draws tables with DOM text nodes and charts with Plotly.
// Every string from the database is written with textContent, or, inside Plotly (which
// parses a little HTML in labels), with &, < and > as entities, so names show as text.
"use strict";

(() => {
  const EXPORTED = (() => {
    const el = document.getElementById("dashboard-export");
    return el ? JSON.parse(el.textContent) : null;
  })();

  const state = {
    config: null, selected: null, cache: new Map(), league: [],
    sort: { key: "elo", dir: -1 }, metric: "", keys: [], refreshes: 0, status: new Map(),
    rows: new Map(), // run key → its row of api/runs as text (what a finished run shows)
    fetched: new Map(), // finished run → its row when its parts were last all fetched
    partsIn: new Map(), // finished run → its row when all but its cross-play were fetched
    inflight: new Set(), // paths being fetched (a slow one is not asked again meanwhile)
    openSettings: new Set(), // members whose settings are unfolded (kept across redraws)
    cross: null, crossAll: false, // the cross-play pairs shown; all of them, or the newest
    crossTotal: 0, // pairs in the whole cross-play table (the server sends the newest first)
    payoff: null, payoffAll: false, // the payoff table; drawn whole, or its newest snapshots
    ratings: [], ratingsAll: false, // rating series; all drawn, or the top ones by Elo
    distinct: new Map(), // run key → what tells it from runs of the same name (a sweep's jobs)
  };
  const $ = (id) => document.getElementById(id);
  // "No ratings yet." while the selected run may still write them; a finished run's empty
  // table is final (a population=none run rates nothing)
  const yet = () => (/^(finished|failed|interrupted)$/.test(state.status.get(state.selected))
    ? " in this run" : " yet");

  // ------------------------------------------------------------------ data
  class ApiError extends Error {}

  async function getText(path) {
    if (EXPORTED) {
      if (!(path in EXPORTED)) throw new ApiError(`not in this export: ${path}`);
      return JSON.stringify(EXPORTED[path]);
    }
    let resp;
    try {
      // "no-cache": the browser asks again every time, with the ETag it has, and an
      // unchanged answer comes back as 304 (no body) and reads as the cached one
      resp = await fetch(path, { cache: "no-cache", headers: { accept: "application/json" } });
    } catch (err) {
      throw new ApiError(`dashboard server unreachable (${err.message}); is it still running?`);
    }
    const text = await resp.text();
    if (!resp.ok) {
      let msg = null;
      try { msg = JSON.parse(text).error; } catch (_) { /* not JSON */ }
      throw new ApiError(msg || `${path}: HTTP ${resp.status}`);
    }
    return text;
  }

  // [document, changed since the last load of this path]
  async function load(path) {
    const text = await getText(path);
    const changed = state.cache.get(path) !== text;
    state.cache.set(path, text);
    return [JSON.parse(text), changed];
  }

  // ------------------------------------------------------------------ formatting
  const ENTITY = { "&": "&amp;", "<": "&lt;", ">": "&gt;" };
  const pt = (s) => String(s).replace(/[&<>]/g, (c) => ENTITY[c]); // text for Plotly labels
  // a name as a chart's tick or legend shows it: at most LABEL_CHARS characters (a very
  // long name squeezed the heatmap and ran over the legend); the hover shows all of it
  const LABEL_CHARS = 80;
  const cut = (s) => {
    const t = String(s);
    return t.length > LABEL_CHARS ? `${t.slice(0, LABEL_CHARS - 21)}…${t.slice(-20)}` : t;
  };
  // cut labels that stay distinct (a heatmap's categories are its labels)
  function cutLabels(labels) {
    const seen = new Map();
    return labels.map((l) => {
      let c = cut(l);
      const n = seen.get(c) || 0;
      seen.set(c, n + 1);
      if (n) c = `${c} (${n + 1})`;
      return c;
    });
  }
  // a trace named by a database name: cut in the legend, whole on hover
  function named(label, hover) {
    const full = pt(label);
    const name = pt(cut(label));
    return name === full ? { name } : { name, meta: full, hovertemplate: `%{meta}<br>${hover}` +
      "<extra></extra>" };
  }
  const num = (v, digits) => (v == null ? "—" : Number(v).toFixed(digits));
  const pct = (v) => (v == null ? "—" : `${(100 * v).toFixed(1)}%`);
  const int = (v) => (v == null ? "—" : Number(v).toLocaleString("en-US"));
  function when(seconds) {
    if (seconds == null) return "—";
    const d = new Date(seconds * 1000);
    const p = (n) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
      `${p(d.getHours())}:${p(d.getMinutes())}`;
  }

  // a name keeps its direction to itself: a U+202E (right-to-left override) in one reversed
  // the text after it; <bdi> (and unicode-bidi: isolate on cells, in the style) isolate it
  function bdi(text) {
    const el = document.createElement("bdi");
    el.textContent = text;
    return el;
  }

  function cell(tr, text, cls, title) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    if (title) td.title = title;
    tr.appendChild(td);
    return td;
  }

  // ------------------------------------------------------------------ charts
  const BASE_LAYOUT = {
    margin: { l: 60, r: 20, t: 16, b: 48 }, paper_bgcolor: "#fff", plot_bgcolor: "#fff",
    font: { size: 12 }, hovermode: "closest", showlegend: true,
    // below the x-axis title; Plotly grows the bottom margin to fit it
    legend: { orientation: "h", x: 0, y: -0.3, yanchor: "top", font: { size: 11 } },
  };
  const PLOT_CONFIG = { responsive: true, displaylogo: false };
  // Plotly's script comes after this one (reading its 3.5 MB took seconds on a loaded
  // machine): the requests and the tables do not wait for it, the charts do
  const plotlyReady = window.Plotly ? Promise.resolve()
    : new Promise((resolve) => window.addEventListener("load", resolve, { once: true }));

  // Plotly's own "responsive" follows only the window; grid cells change size on their own.
  // A chart just hidden (the metric chart when another run is picked) is not resized:
  // Plotly rejects a div that is not displayed, and it is drawn again when shown
  const resizer = new ResizeObserver((entries) => {
    for (const e of entries) {
      const div = e.target;
      if (!div.data || div.hidden || div.offsetParent === null) continue;
      Plotly.Plots.resize(div).catch(() => {}); // removed meanwhile: nothing to fit
    }
  });

  function newChart(id) {
    const div = document.createElement("div");
    div.className = "chart";
    div.id = id;
    resizer.observe(div);
    return div;
  }

  function dropChart(div) {
    resizer.unobserve(div);
    if (div.data) Plotly.purge(div);
    div.remove();
  }

  async function plot(div, traces, layout) {
    await plotlyReady;
    if (div.classList.contains("empty-chart")) {
      div.classList.remove("empty-chart");
      div.textContent = "";
    }
    const full = { ...BASE_LAYOUT, ...layout };
    // long labels (snapshot names) widen the margins instead of being cut off
    full.xaxis = { automargin: true, ...layout.xaxis };
    full.yaxis = { automargin: true, ...layout.yaxis };
    // a legend of many entries makes the chart taller rather than the plot smaller
    const rows = full.showlegend && traces.length > 1 ? Math.ceil(traces.length / 2) : 0;
    div.style.height = `${320 + 18 * Math.max(0, rows - 2)}px`;
    await Plotly.react(div, traces, full, PLOT_CONFIG);
    div.dataset.rendered = "1";
  }

  function emptyChart(div, text) {
    if (div.data) Plotly.purge(div);
    div.style.height = "";
    div.textContent = text;
    div.classList.add("empty-chart");
    div.dataset.rendered = "";
  }

  // ------------------------------------------------------------------ runs
  const runKey = (r) => `${r.source}/${r.id}`;

  // what tells apart runs of one experiment and name (a sweep's jobs share both): the Hydra
  // overrides (key=value) set otherwise in another of them, else the run's folder name
  function distinctions(runs) {
    const groups = new Map();
    for (const r of runs) {
      const g = JSON.stringify([r.experiment, r.name]);
      groups.set(g, [...(groups.get(g) || []), r]);
    }
    const out = new Map();
    const split = (o) => (o.includes("=") ? [o.slice(0, o.indexOf("=")), o.slice(o.indexOf("=") + 1)]
      : [o, ""]);
    for (const rs of groups.values()) {
      if (rs.length < 2) continue;
      const sets = rs.map((r) => new Map((r.overrides || []).map(split)));
      const keys = [...new Set(sets.flatMap((m) => [...m.keys()]))];
      const differ = keys.filter((k) => new Set(sets.map((m) => m.get(k))).size > 1);
      rs.forEach((r, i) => {
        const text = differ.map((k) => (sets[i].has(k) ? `${k}=${sets[i].get(k)}` : `${k} unset`))
          .join(" · ");
        const folder = String(r.path).split(/[\\/]/).slice(-2, -1)[0] || "";
        out.set(runKey(r), text || folder);
      });
    }
    return out;
  }

  function renderRuns(doc) {
    const body = $("runs-table").tBodies[0];
    body.replaceChildren();
    state.status = new Map(doc.runs.map((r) => [runKey(r), r.status]));
    state.rows = new Map(doc.runs.map((r) => [runKey(r), JSON.stringify(r)]));
    state.distinct = distinctions(doc.runs);
    for (const r of doc.runs) {
      const tr = document.createElement("tr");
      tr.dataset.run = runKey(r);
      if (runKey(r) === state.selected) tr.classList.add("selected");
      cell(tr, r.experiment || "—");
      const name = cell(tr, "");
      name.append(bdi(r.name));
      const job = state.distinct.get(runKey(r));
      if (job) {
        const tag = document.createElement("span");
        tag.className = "muted job";
        tag.title = (r.overrides || []).join(" ") || "the run's folder";
        tag.append(" · ", bdi(job));
        name.appendChild(tag);
      }
      cell(tr, r.game || "—");
      const st = cell(tr, "");
      const pill = document.createElement("span");
      pill.className = `pill ${/^(running|failed|interrupted)$/.test(r.status) ? r.status : ""}`;
      pill.textContent = r.status;
      st.appendChild(pill);
      cell(tr, when(r.started_at));
      cell(tr, int(r.members), "num");
      cell(tr, int(r.snapshots), "num");
      cell(tr, int(r.episodes), "num");
      cell(tr, r.path, "path", `database id ${r.source}`);
      tr.addEventListener("click", () => select(runKey(r)));
      body.appendChild(tr);
    }
    const errs = $("source-errors");
    errs.replaceChildren();
    for (const e of doc.errors) {
      const li = document.createElement("li");
      li.textContent = e.error;
      errs.appendChild(li);
    }
    if (!doc.runs.length) {
      const tr = document.createElement("tr");
      cell(tr, doc.errors.length ? "No readable database." : "No runs yet.", "muted").colSpan = 9;
      body.appendChild(tr);
    }
  }

  // ------------------------------------------------------------------ sweeps
  // each sweep's table per setting, pooled over seeds (populations.sweep_summary's figures
  // and their text as it prints them); every value is a text node
  function renderSweeps(doc) {
    const box = $("sweeps-body");
    box.replaceChildren();
    $("sweeps-section").hidden = !doc.sweeps.length;
    for (const sw of doc.sweeps) {
      const h = document.createElement("h3");
      h.className = "sweep-title";
      const statuses = Object.entries(sw.statuses).map(([s, n]) => `${n} ${s}`).join(", ");
      h.append(bdi(sw.path), " ");
      const info = document.createElement("span");
      info.className = "muted";
      info.textContent = `${sw.jobs} job${sw.jobs === 1 ? "" : "s"} (${statuses})` +
        (sw.pooled_keys.length ? ` · pooling ${sw.pooled_keys.join(", ")}` : "");
      h.appendChild(info);
      box.appendChild(h);
      const table = document.createElement("table");
      table.className = "table sweep-table";
      const head = table.createTHead().insertRow();
      const th = (text, cls) => {
        const el = document.createElement("th");
        el.textContent = text;
        if (cls) el.className = cls;
        head.appendChild(el);
      };
      for (const k of (sw.by.length ? sw.by : ["setting"])) th(k);
      th("n", "num");
      for (const c of sw.columns) th(c.label, "num");
      const body = table.createTBody();
      for (const g of sw.groups) {
        const tr = body.insertRow();
        for (const k of sw.by) cell(tr, "").append(bdi(g.setting[k] ?? "-"));
        if (!sw.by.length) cell(tr, "all");
        cell(tr, `${g.n}${g.others ? ` (+${g.others} not finished)` : ""}`, "num");
        for (const c of sw.columns) {
          const st = g.stats[c.key];
          cell(tr, st ? st.text : "-", "num", st ? `n = ${st.n}` : "");
        }
      }
      if (!sw.columns.length) {
        const tr = body.insertRow();
        cell(tr, "No finished job with figures yet.", "muted").colSpan = sw.by.length + 2;
      }
      box.appendChild(table);
    }
  }

  function setSelected(key) {
    state.selected = key;
    // the page shows another run's parts now: forget what this run's answers were, so each
    // is drawn when it comes (unchanged from the last visit or not) and a finished run is
    // fetched again; an answer that came for it while another run was shown was not drawn
    const base = `api/runs/${key}`;
    for (const path of [...state.cache.keys()]) {
      if (path === base || path.startsWith(`${base}/`)) state.cache.delete(path);
    }
    state.fetched.delete(key);
    state.partsIn.delete(key);
    state.metric = "";
    state.crossAll = false;
    state.payoffAll = false;
    state.ratingsAll = false;
    $("metric-select").value = "";
    $("metric-chart").hidden = true;
    for (const tr of $("runs-table").tBodies[0].rows) {
      tr.classList.toggle("selected", tr.dataset.run === key);
    }
    history.replaceState(null, "", `#run=${key}`);
    $("run-section").hidden = false;
  }

  function select(key) {
    if (key === state.selected) return;
    setSelected(key);
    refreshRun().then(finishRefresh);
  }

  function renderRunTitle(run) {
    const h = $("run-title");
    h.replaceChildren();
    h.append(bdi(run.experiment || run.name), " · ", bdi(run.name), " ");
    const job = state.distinct.get(runKey(run));
    if (job) h.append("(", bdi(job), ") ");
    const game = document.createElement("span");
    game.className = "muted";
    game.textContent = `${run.game || ""} · ${run.status} · started ${when(run.started_at)}`;
    h.appendChild(game);
    const conf = run.config_settings || { items: [], left_out: 0 };
    $("run-config-count").textContent = `(${settingsCount(conf)})`;
    $("run-config-body").replaceChildren(settingsList(conf, new Set()));
  }

  // ------------------------------------------------------------------ settings
  // a flat list of settings ({items: [{key, value}], left_out}) as a list of key / value
  // pairs (not a table: the league table's rows stay its members); the keys in `differ`
  // (set otherwise than for another member of the same kind) are marked
  function settingsList(flat, differ) {
    const dl = document.createElement("dl");
    dl.className = "settings";
    const add = (tag, text, cls, title) => {
      const el = document.createElement(tag);
      el.textContent = text;
      if (cls) el.className = cls;
      if (title) el.title = title;
      dl.appendChild(el);
    };
    for (const it of flat.items) {
      const mark = differ.has(it.key) ? "differs" : "";
      const why = mark && "set otherwise than for another member of this kind";
      add("dt", it.key, mark, why);
      add("dd", it.value, mark, why);
    }
    if (!flat.items.length || flat.left_out > 0) {
      add("dd", flat.left_out > 0 ? `${int(flat.left_out)} more left out` : "none recorded",
        "muted whole");
    }
    return dl;
  }

  const settingsCount = (flat) => {
    const n = flat.items.length + flat.left_out;
    return `${int(n)} setting${n === 1 ? "" : "s"}`;
  };

  function settingsCell(tr, r) {
    const td = cell(tr, "", "settings");
    if (r.settings == null) {
      td.textContent = r.settings_error ? "unreadable" : "—";
      td.title = r.settings_error || "not recorded (a learner without a config, or a run " +
        "from before members' settings were recorded)";
      return;
    }
    const values = new Map(r.settings.items.map((it) => [it.key, it.value]));
    const differ = r.settings_differ || [];
    const details = document.createElement("details");
    details.open = state.openSettings.has(r.member_id);
    details.addEventListener("toggle", () => {
      if (details.open) state.openSettings.add(r.member_id);
      else state.openSettings.delete(r.member_id);
    });
    const summary = document.createElement("summary");
    // what tells it apart from the run's other members of its kind, else how many there are
    if (differ.length) {
      for (const [i, k] of differ.slice(0, 3).entries()) {
        summary.append(...(i ? [" · "] : []), bdi(k), " = ",
          bdi(values.has(k) ? values.get(k) : "(unset)"));
      }
      if (differ.length > 3) summary.append(` · +${differ.length - 3} more`);
    } else {
      summary.textContent = settingsCount(r.settings);
    }
    details.append(summary, settingsList(r.settings, new Set(differ)));
    td.appendChild(details);
  }

  // ------------------------------------------------------------------ league table
  function renderLeague(rows) {
    state.league = rows;
    drawLeague();
  }

  function drawLeague() {
    const { key, dir } = state.sort;
    const rows = [...state.league].sort((a, b) => {
      const x = a[key];
      const y = b[key];
      if (x == null || y == null) return (x == null) - (y == null); // missing values last
      return (typeof x === "string" ? x.localeCompare(y) : x - y) * dir;
    });
    const body = $("league-table").tBodies[0];
    body.replaceChildren();
    for (const r of rows) {
      const tr = document.createElement("tr");
      tr.dataset.memberId = r.member_id;
      cell(tr, r.member, "member", `roles: ${r.roles.join(", ")}`);
      cell(tr, r.kind_label, null, r.kind);
      // learners record different things as their step: the server names the unit
      const step = !r.learner_step ? ""
        : r.step_unit ? ` · ${int(r.learner_step)} ${r.step_unit}` : ` · step ${int(r.learner_step)}`;
      cell(tr, r.latest_version == null ? "—" : `v${r.latest_version}${step}`, "num",
        r.step_title && `v${r.latest_version}: ${r.step_title}`);
      const rated = r.rated_version == null ? null : `rating of v${r.rated_version}`;
      cell(tr, r.mu == null ? "—" : `${num(r.mu, 2)} ± ${num(r.sigma, 2)}`, "num", rated);
      cell(tr, num(r.elo, 0), "num", rated);
      cell(tr, int(r.rated_pairs), "num", rated && `role-swapped pairs the ${rated} is from`);
      cell(tr, int(r.episodes), "num");
      cell(tr, r.win_rate == null ? "—" : ci(r.win_rate, r.win_rate_lo, r.win_rate_hi, pct),
        "num win", rated && `${rated}; [95 % Wilson interval] over ${int(r.win_pairs)} ` +
        "role-swapped pairs, a draw counting 1/2");
      const nc = r.nash_conv == null ? "—" : num(r.nash_conv, 3)
        + (r.nash_conv_half == null ? "" : ` ± ${num(r.nash_conv_half, 3)}`);
      cell(tr, nc, "num", r.nash_conv == null ? null
        : `${r.nash_conv_method} of v${r.nash_conv_version}`);
      settingsCell(tr, r);
      body.appendChild(tr);
    }
    $("league-empty").hidden = rows.length > 0;
    for (const th of $("league-table").tHead.rows[0].cells) {
      const sorted = th.dataset.key === key;
      th.setAttribute("aria-sort", sorted ? (dir > 0 ? "ascending" : "descending") : "none");
    }
  }

  function onSortClick(ev) {
    const th = ev.target.closest("th");
    if (!th || !th.dataset.key) return;
    const k = th.dataset.key;
    state.sort = k === state.sort.key
      ? { key: k, dir: -state.sort.dir }
      : { key: k, dir: th.dataset.type === "text" ? 1 : -1 };
    drawLeague();
  }

  // ------------------------------------------------------------------ payoffs, ratings
  const PAYOFF_SCALE = [[0, "#b2182b"], [0.25, "#ef8a62"], [0.5, "#f7f7f7"],
    [0.75, "#67a9cf"], [1, "#2166ac"]];

  // "N older snapshots left out ..." when a table shows only the newest ones (numbers only)
  function leftOut(n, max, what) {
    return n > 0 ? `${int(n)} older snapshot${n === 1 ? "" : "s"} left out of ${what}: ` +
      `it shows the newest ${int(max)}.` : "";
  }

  // the compact payoff form (filled cells only) as the k x k tables the heatmap draws
  function expandCells(doc) {
    const k = doc.ids.length;
    const grid = (fill) => Array.from({ length: k }, () => new Array(k).fill(fill));
    doc.value = grid(null);
    doc.win_rate = grid(null);
    doc.count = grid(0);
    const c = doc.cells;
    for (let t = 0; t < c.i.length; t++) {
      doc.value[c.i[t]][c.j[t]] = c.value[t];
      doc.win_rate[c.i[t]][c.j[t]] = c.win_rate[t];
      doc.count[c.i[t]][c.j[t]] = c.count[t];
    }
  }

  // snapshots the heatmap draws before "show all": a 200 x 200 one (40,000 cells, each with
  // its hover text) took seconds to draw; the newest ones are those of interest
  const PAYOFF_SNAPSHOTS = 40;

  // "show all N ..." for a part drawn in part; hidden when all of it is drawn
  function moreButton(id, all, total, limit, what, which) {
    const more = $(id);
    more.hidden = all;
    more.dataset.limit = String(limit);
    more.textContent = `show all ${int(total)} ${what}`;
    $(id.replace("-more", "-shown")).textContent = all ? ""
      : `The ${int(limit)} ${what} ${which} are shown, of ${int(total)}. `;
  }

  // the table's newest `keep` snapshots (the last ids) as a table of its own
  function newestOf(doc, keep) {
    const k = doc.ids.length;
    if (k <= keep) return doc;
    const at = Array.from({ length: keep }, (_, t) => k - keep + t);
    const sub = (m) => at.map((i) => at.map((j) => m[i][j]));
    return { ...doc, ids: at.map((i) => doc.ids[i]), labels: at.map((i) => doc.labels[i]),
      value: sub(doc.value), win_rate: sub(doc.win_rate), count: sub(doc.count) };
  }

  function renderPayoffs(doc) {
    if (doc.cells) expandCells(doc);
    state.payoff = doc;
    return drawPayoffs();
  }

  async function drawPayoffs() {
    const all = state.payoffAll || state.payoff.ids.length <= PAYOFF_SNAPSHOTS;
    moreButton("payoff-more", all, state.payoff.ids.length, PAYOFF_SNAPSHOTS, "snapshots",
      "newest");
    const doc = all ? state.payoff : newestOf(state.payoff, PAYOFF_SNAPSHOTS);
    const div = $("payoff-chart");
    const note = $("payoff-note");
    note.textContent = leftOut(doc.left_out, doc.max_snapshots, "this table");
    note.hidden = !note.textContent;
    // a league's cells are margins, PSRO's returns: the data says which (value_kind)
    const what = doc.value_kind === "return" ? "return" : "margin";
    if (doc.value_label) $("payoff-meaning").textContent = doc.value_label;
    if (!doc.ids.length) return emptyChart(div, `No evaluated pairs${yet()}.`);
    const labels = cutLabels(doc.labels).map(pt);
    const full = doc.labels.map(pt);
    const pair = doc.value.map((row, i) => row.map((_, j) => `${full[i]} vs ${full[j]}`));
    const text = doc.value.map((row, i) => row.map((v, j) => (v == null ? "not played"
      : `win rate per role-swapped pair ${pct(doc.win_rate[i][j])} · ` +
        `${doc.count[i][j]} pair${doc.count[i][j] === 1 ? "" : "s"}`)));
    const trace = {
      type: "heatmap", z: doc.value, x: labels, y: labels, text, customdata: pair, zmid: 0,
      colorscale: PAYOFF_SCALE, xgap: 1, ygap: 1, hoverongaps: false,
      // the whole names (the axes may show them cut)
      hovertemplate: `%{customdata}<br>${what} %{z:.3f}<br>%{text}<extra></extra>`,
      colorbar: { title: { text: `${doc.exact ? "exact" : "mean"} ${what}` }, thickness: 12 },
    };
    if (doc.ids.length <= 12) trace.texttemplate = "%{z:.2f}";
    await plot(div, [trace], {
      showlegend: false, margin: { l: 90, r: 20, t: 16, b: 80 },
      xaxis: { type: "category", tickangle: -30, title: { text: "column snapshot" } },
      yaxis: { type: "category", autorange: "reversed" },
    });
  }

  // rating series drawn before "show all": the top ones by their last Elo (200 series with
  // their σ bars took many seconds to draw, and could not be told apart)
  const RATING_SERIES = 20;

  function lastElo(s) {
    for (let t = s.elo.length - 1; t >= 0; t--) if (s.elo[t] != null) return s.elo[t];
    return -Infinity;
  }

  function renderRatings(series) {
    state.ratings = series;
    return drawRatings();
  }

  async function drawRatings() {
    const all = state.ratingsAll || state.ratings.length <= RATING_SERIES;
    moreButton("ratings-more", all, state.ratings.length, RATING_SERIES, "series",
      "of the highest Elo (in both rating charts)");
    const top = new Set([...state.ratings].sort((a, b) => (lastElo(b) - lastElo(a)) || 0)
      .slice(0, RATING_SERIES));
    const series = all ? state.ratings : state.ratings.filter((s) => top.has(s));
    const elo = $("elo-chart");
    const mu = $("mu-chart");
    if (!series.length) {
      emptyChart(elo, `No ratings${yet()}.`);
      emptyChart(mu, `No ratings${yet()}.`);
      return;
    }
    const legend = series.length <= 16;
    // a rating holds from its row until the next (a league writes one where it changes):
    // step lines ("hv"), each held on to the run's last rating step without a marker there
    // (no row is there), so a line that ends did not end with its snapshot
    const line = (s, y, extra) => {
      const end = s.step[s.step.length - 1];
      const held = s.run_last_step != null && end != null && s.run_last_step > end;
      const marks = s.step.map(() => 6);
      const trace = {
        type: "scatter", mode: "lines+markers", x: s.step, y,
        ...named(s.label, "step %{x}: %{y}"), line: { shape: "hv" }, marker: { size: marks },
        ...extra,
      };
      if (!held) return trace;
      const err = trace.error_y && { ...trace.error_y, array: [...trace.error_y.array, null] };
      return {
        ...trace, x: [...s.step, s.run_last_step], y: [...y, y[y.length - 1]],
        marker: { size: [...marks, 0] }, ...(err ? { error_y: err } : {}),
        text: [...s.step.map(() => ""), `held since step ${end}`],
      };
    };
    const steps = series.flatMap((s) => [...s.step, s.run_last_step]).filter((x) => x != null);
    const few = Math.max(...steps) - Math.min(...steps) <= 10; // integer ticks, not 1.5
    const axes = {
      showlegend: legend, xaxis: { title: { text: "rating step" }, ...(few ? { dtick: 1 } : {}) },
    };
    await plot(elo, series.map((s) => line(s, s.elo)),
      { ...axes, yaxis: { title: { text: "Elo" } } });
    await plot(mu, series.map((s) => line(s, s.mu, {
      error_y: { type: "data", array: s.sigma, visible: true, thickness: 1, width: 2 },
    })), { ...axes, yaxis: { title: { text: "μ (bars: σ)" } } });
  }

  // ------------------------------------------------------------------ cross-play, α-Rank
  const ci = (v, lo, hi, f) => (v == null ? "—" : `${f(v)} [${f(lo)}, ${f(hi)}]`);
  const n3 = (v) => num(v, 3);

  // the compact cross-play's pairs (columns, no labels) as the plain form's rows
  function pairRows(doc) {
    if (Array.isArray(doc.pairs)) return doc.pairs;
    const label = new Map(doc.ids.map((s, i) => [s, doc.labels[i]]));
    const cols = Object.keys(doc.pairs);
    return doc.pairs.row.map((_, t) => {
      const p = Object.fromEntries(cols.map((k) => [k, doc.pairs[k][t]]));
      return { ...p, row_label: label.get(p.row), col_label: label.get(p.col) };
    });
  }

  // pairs asked for and drawn before "show all" (api/config's crossplay_rows): thousands of
  // rows (a 200-member league's 14,270 made the page slow to lay out and to sort) are sent
  // and drawn only when asked for; the server sends the newest snapshots' pairs first
  const crossPath = (base) => (state.crossAll ? compact(`${base}/crossplay`)
    : `${compact(`${base}/crossplay`)}&rows=${state.config.crossplay_rows}`);

  function drawCrossplayRows() {
    const shown = state.cross;
    const all = shown.length >= state.crossTotal;
    const body = $("crossplay-table").tBodies[0];
    body.replaceChildren();
    for (const p of shown) {
      const tr = document.createElement("tr");
      tr.dataset.pair = `${p.row}/${p.col}`;
      cell(tr, p.row_label, "member");
      cell(tr, p.col_label, "member");
      cell(tr, int(p.n), "num");
      cell(tr, ci(p.win, p.win_lo, p.win_hi, pct), "num win");
      cell(tr, ci(p.draw, p.draw_lo, p.draw_hi, pct), "num");
      cell(tr, ci(p.loss, p.loss_lo, p.loss_hi, pct), "num");
      cell(tr, ci(p.margin, p.margin_lo, p.margin_hi, n3), "num margin");
      body.appendChild(tr);
    }
    const more = $("crossplay-more");
    more.hidden = all;
    more.dataset.limit = String(shown.length);
    more.textContent = `show all ${int(state.crossTotal)} pairs`;
    $("crossplay-shown").textContent = all ? "" : `The ${int(shown.length)} pairs of the ` +
      `newest snapshots are shown, of ${int(state.crossTotal)}. `;
  }

  // a large run's first statistics are computed in the background: say so until they come
  function crossplayPending(doc) {
    state.cross = [];
    state.crossTotal = 0;
    drawCrossplayRows();
    $("alpharank-table").tBodies[0].replaceChildren();
    $("crossplay-empty").hidden = false;
    $("crossplay-empty").textContent = `Computing cross-play over ${int(doc.as_of.matches)} ` +
      "recorded episodes; it shows here when ready.";
    $("alpharank-note").textContent = "";
    $("crossplay-card").dataset.stale = "1";
    $("crossplay-card").dataset.pending = "1";
  }

  // a background computation that failed: its reason, as text, until the run's matches change
  function crossplayFailed(doc) {
    crossplayPending(doc);
    $("crossplay-empty").textContent = `${doc.error}. It is tried again when the run records ` +
      "new episodes.";
    $("crossplay-card").dataset.pending = "";
  }

  function renderCrossplay(doc) {
    if (doc.pending) return crossplayPending(doc);
    if (doc.error && !doc.pairs) return crossplayFailed(doc);
    $("crossplay-card").dataset.pending = "";
    doc.pairs = pairRows(doc);
    state.cross = doc.pairs;
    state.crossTotal = doc.pairs_total ?? doc.pairs.length;
    drawCrossplayRows();
    $("crossplay-empty").hidden = doc.pairs.length > 0;
    $("crossplay-empty").textContent = `No episodes between two different snapshots${yet()}.`;
    const ranked = [...doc.ratings].sort((a, b) =>
      (a.alpharank_rank ?? Infinity) - (b.alpharank_rank ?? Infinity));
    const rbody = $("alpharank-table").tBodies[0];
    rbody.replaceChildren();
    for (const r of ranked) {
      const tr = document.createElement("tr");
      tr.dataset.snapshot = r.snapshot_id;
      cell(tr, r.alpharank_rank == null ? "—" : String(r.alpharank_rank), "num");
      cell(tr, r.label, "member");
      cell(tr, ci(r.alpharank_pi, r.alpharank_pi_lo, r.alpharank_pi_hi, n3), "num pi");
      cell(tr, pct(r.alpharank_top), "num top");
      cell(tr, ci(r.mu, r.mu_lo, r.mu_hi, (v) => num(v, 1)), "num");
      cell(tr, num(r.elo, 0), "num");
      cell(tr, ci(r.replay_elo, r.replay_elo_lo, r.replay_elo_hi, (v) => num(v, 0)), "num elo");
      rbody.appendChild(tr);
    }
    const ar = doc.alpharank;
    const older = ar.older_left_out > 0 ? ` α-Rank ranks the newest ${int(ar.max_snapshots)} ` +
      `snapshots of cross-play; ${int(ar.older_left_out)} older one` +
      `${ar.older_left_out === 1 ? " is" : "s are"} not ranked.` : "";
    const updating = doc.error ? ` ${doc.error}; these figures count ` +
      `${int(doc.as_of.matches)} recorded episodes.`
      : doc.stale ? ` Updating: these figures count ${int(doc.as_of.matches)} ` +
        "recorded episodes; newer ones are being added." : "";
    const out = ar.left_out_labels.length
      ? " Left out of α-Rank (not met by every other snapshot): " +
        `${ar.left_out_labels.map((l) => `\u2068${l}\u2069`).join(", ")}.` // each isolated
      : "";
    $("alpharank-note").textContent = `${int(doc.episodes)} two-snapshot episodes; ` +
      `${int(doc.resamples)} bootstrap resamples per pair (Elo replay: ` +
      `${doc.elo_resamples ? int(doc.elo_resamples) : "skipped, too many episodes"}), ` +
      `seed ${doc.seed}. α-Rank: OpenSpiel alpharank, α ${ar.alpha == null ? "→ ∞" : ar.alpha}, ` +
      `m = ${ar.m}, on the mean margins; its interval and "first in" from ` +
      `${int(doc.alpharank_resamples)} bootstrap tables. Rates: Wilson score intervals; ` +
      "a bootstrap interval of no width (every episode of a pair alike, e.g. always won) " +
      `means no spread in the episodes seen, not certainty.${out}` +
      (doc.left_out > 0 ? ` ${leftOut(doc.left_out, doc.max_snapshots, "cross-play")}` : "") +
      (doc.left_out_episodes > 0 ? ` ${int(doc.left_out_episodes)} episode` +
        `${doc.left_out_episodes === 1 ? "" : "s"} naming more than ` +
        `${int(doc.max_episode_snapshots)} snapshots left out.` : "") + older + updating;
    $("crossplay-card").dataset.stale = doc.stale ? "1" : "";
  }

  // ------------------------------------------------------------------ PSRO
  async function renderPsro(doc) {
    const has = doc.iteration.length > 0;
    $("nashconv-card").hidden = !has;
    $("psro-section").hidden = !has;
    if (!has) return;
    const nc = $("nashconv-chart");
    if (doc.nash_conv.every((v) => v == null)) {
      emptyChart(nc, "NashConv is not computed for this game.");
    } else {
      await plot(nc, [{ type: "scatter", mode: "lines+markers", x: doc.iteration,
        y: doc.nash_conv, name: "NashConv", connectgaps: true }], {
        showlegend: false, xaxis: { title: { text: "PSRO iteration" }, dtick: 1 },
        yaxis: { title: { text: "NashConv" }, rangemode: "tozero" },
      });
    }
    const box = $("meta-charts");
    while (box.children.length > doc.seats.length) dropChart(box.lastChild);
    while (box.children.length < doc.seats.length) {  // all cells first: widths are final
      box.appendChild(newChart(`meta-chart-${box.children.length}`));
    }
    for (const [i, seat] of doc.seats.entries()) {
      const div = box.children[i];
      const traces = seat.weights.map((w, k) => ({
        type: "bar", x: doc.iteration, y: w,
        ...named(`${seat.seat} ${seat.members[k]}`, "iteration %{x}: %{y}"),
      }));
      await plot(div, traces, {
        barmode: "stack", showlegend: seat.members.length <= 20,
        title: { text: pt(seat.seat), font: { size: 13 } }, margin: { l: 60, r: 20, t: 36, b: 48 },
        xaxis: { title: { text: "PSRO iteration" }, dtick: 1 },
        yaxis: { title: { text: "meta-strategy weight" }, range: [0, 1] },
      });
    }
  }

  // ------------------------------------------------------------------ learner curves
  // a curve of one point (a metric logged once: a one-generation league's legal rate) as a
  // marker: a line of one point draws nothing
  const curve = (s) => ({
    type: "scatter", mode: s.step.length === 1 ? "markers" : "lines", x: s.step, y: s.value,
    ...named(s.member ? `${s.key} · ${s.member}` : s.key, "step %{x}: %{y}"),
  });

  async function renderLearner(doc) {
    const box = $("learner-charts");
    const titles = doc.panels.map((p) => p.title).join("\n");
    if (box.dataset.titles !== titles) {
      for (const div of [...box.children]) dropChart(div);
      box.replaceChildren();
      for (const [i, p] of doc.panels.entries()) {
        const div = newChart(`learner-chart-${i}`);
        div.dataset.title = p.title;
        box.appendChild(div);
      }
      box.dataset.titles = titles;
    }
    $("learner-empty").hidden = doc.panels.length > 0;
    $("learner-empty").textContent = `No learner metrics${yet()}.`;
    for (const [i, p] of doc.panels.entries()) {
      await plot(box.children[i], p.series.map(curve), {
        title: { text: pt(p.title), font: { size: 13 } }, margin: { l: 60, r: 20, t: 36, b: 48 },
        showlegend: p.series.length <= 12,
        xaxis: { title: { text: "step" } }, yaxis: { title: { text: pt(p.y) } },
      });
    }
    if (doc.keys.join("\n") !== state.keys.join("\n")) {
      state.keys = doc.keys;
      const sel = $("metric-select");
      const keep = sel.value;
      sel.replaceChildren(new Option("—", ""));
      for (const k of doc.keys) sel.appendChild(new Option(k, k)); // Option text is not HTML
      sel.value = doc.keys.includes(keep) ? keep : "";
    }
  }

  async function renderMetric(series) {
    const div = $("metric-chart");
    div.hidden = false;
    if (!series.length) return emptyChart(div, "No values for this metric.");
    await plot(div, series.map(curve), {
      title: { text: pt(state.metric), font: { size: 13 } }, margin: { l: 60, r: 20, t: 36, b: 48 },
      xaxis: { title: { text: "step" } },
    });
  }

  // ------------------------------------------------------------------ refresh loop
  const errors = new Set();

  // fetch one part and draw it if it changed (true: done); a part still loading from the
  // last refresh is not asked again, and one of a run no longer selected is not drawn
  async function part(path, render) {
    if (state.inflight.has(path)) return false;
    state.inflight.add(path);
    const run = state.selected;
    try {
      const [doc, changed] = await load(path);
      if (changed && (run === state.selected || !path.startsWith("api/runs/"))) await render(doc);
      return true;
    } catch (err) {
      errors.add(err.message);
      if (!(err instanceof ApiError)) console.error(err); // a drawing bug, not a data problem
      return false;
    } finally {
      state.inflight.delete(path);
    }
  }

  // the page reads the compact forms (filled cells, change points), which an export embeds
  const compact = (path) => `${path}?compact=1`;

  async function refreshRun() {
    const run = state.selected;
    if (!run) return;
    // a run that is not running is fetched again only when its row in the runs list changes
    // (its database's db_version changes with any write)
    const row = state.rows.get(run);
    const finished = state.status.has(run) && state.status.get(run) !== "running";
    if (finished && state.fetched.get(run) === row) return;
    const base = `api/runs/${run}`;
    // cross-play is the slow part: it draws when it comes, and the rest does not wait
    const cross = part(crossPath(base), renderCrossplay);
    if (finished && state.partsIn.get(run) === row) { // only a stale or pending cross-play
      if (await cross && !$("crossplay-card").dataset.stale) state.fetched.set(run, row);
      return;
    }
    const done = await Promise.all([
      part(base, renderRunTitle), part(`${base}/league`, renderLeague),
      part(compact(`${base}/payoffs`), renderPayoffs),
      part(compact(`${base}/ratings`), renderRatings),
      part(`${base}/psro`, renderPsro), part(`${base}/learner`, renderLearner),
    ]);
    if (state.metric) {
      done.push(await part(`${base}/metrics?key=${encodeURIComponent(state.metric)}`,
        renderMetric));
    }
    if (finished && done.every(Boolean)) {
      state.partsIn.set(run, row);
      cross.then((ok) => { // all in, and not a stale cross-play: nothing more to ask for
        if (ok && !$("crossplay-card").dataset.stale) state.fetched.set(run, row);
      });
    }
  }

  function finishRefresh() {
    const banner = $("banner");
    banner.hidden = errors.size === 0;
    banner.textContent = [...errors].join("\n");
    errors.clear();
    state.refreshes += 1;
    document.body.dataset.refreshes = String(state.refreshes);
    const status = $("status");
    if (EXPORTED) {
      const at = state.config.generated_at;
      status.textContent = `static export${at ? ` of ${when(at)}` : ""} · not live`;
    } else {
      status.textContent = `live · every ${state.config.refresh_seconds} s · updated ` +
        new Date().toLocaleTimeString("en-GB");
      status.classList.add("live");
    }
  }

  async function refresh() {
    await part("api/runs", (doc) => {
      renderRuns(doc);
      const keys = doc.runs.map(runKey);
      const wanted = (location.hash.match(/^#run=(.+)$/) || [])[1];
      if (!state.selected && keys.length) setSelected(keys.includes(wanted) ? wanted : keys[0]);
    });
    // an export of folders without a sweep leaves its (empty) answer out
    if (!EXPORTED || "api/sweeps" in EXPORTED) await part("api/sweeps", renderSweeps);
    await refreshRun();
    finishRefresh();
  }

  async function tick() {
    if (!document.hidden) await refresh();
    if (!EXPORTED) setTimeout(tick, 1000 * state.config.refresh_seconds);
  }

  async function start() {
    try {
      [state.config] = await load("api/config");
    } catch (err) {
      $("banner").hidden = false;
      $("banner").textContent = err.message;
      setTimeout(start, 5000);
      return;
    }
    await tick();
  }

  for (const id of ["payoff-chart", "elo-chart", "mu-chart", "nashconv-chart", "metric-chart"]) {
    resizer.observe($(id));
  }
  $("league-table").tHead.addEventListener("click", onSortClick);
  $("crossplay-more").addEventListener("click", () => {
    state.crossAll = true;
    part(crossPath(`api/runs/${state.selected}`), renderCrossplay).then(finishRefresh);
  });
  $("payoff-more").addEventListener("click", () => {
    state.payoffAll = true;
    drawPayoffs().catch((err) => console.error(err));
  });
  $("ratings-more").addEventListener("click", () => {
    state.ratingsAll = true;
    drawRatings().catch((err) => console.error(err));
  });
  $("metric-select").addEventListener("change", (ev) => {
    state.metric = ev.target.value;
    if (!state.metric) { $("metric-chart").hidden = true; return; }
    const path = `api/runs/${state.selected}/metrics?key=${encodeURIComponent(state.metric)}`;
    state.cache.delete(path);
    part(path, renderMetric).then(finishRefresh);
  });
  window.addEventListener("hashchange", () => {
    const wanted = (location.hash.match(/^#run=(.+)$/) || [])[1];
    if (wanted) select(wanted);
  });
  start();
})();
