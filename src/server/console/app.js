// The operator console: read-only pages over the API, with the caller's
// own key. The key is kept in sessionStorage (this tab only, gone when it
// closes) and sent only to this origin. Every value from the server is put
// on the page as text (never as HTML), and the page runs under a strict
// Content-Security-Policy: no inline script or style, nothing fetched from
// elsewhere.

const KEY = "stockledger.key";
/// Rows of the live event stream kept on the page.
const MAX_LIVE_ROWS = 200;
/// Points of an item's stock-over-time chart.
const CHART_POINTS = 24;
/// How often the overview and the expiring list are read again.
const REFRESH_MS = 5000;
/// As-of reads of the chart in flight at once: each folds the item's
/// history on the server and holds one of its connections.
const CHART_READS_AT_ONCE = 4;

const READ = ["reader", "writer", "auditor", "admin"];
const AUDIT = ["auditor", "admin"];
// Listings name orders a key did not ask for by id: not for a reader.
const LIST = ["writer", "auditor", "admin"];

// Each page: its title, who may see it, and how it is drawn.
const PAGES = {
  overview: { title: "Overview", roles: AUDIT, draw: drawOverview },
  item: { title: "Item", roles: READ, draw: drawItem },
  order: { title: "Order", roles: READ, draw: drawOrder },
  expiring: { title: "Expiring", roles: LIST, draw: drawExpiring },
  events: { title: "Live events", roles: AUDIT, draw: drawEvents },
};

let me = null;          // { name, role } of the key
let leave = () => {};   // stops what the current page runs (timers, streams)

class ApiError extends Error {
  constructor(status, code, message) {
    super(`${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
  }
}

/** A read of the API with the tab's key; the body as JSON. */
async function api(path, init = {}) {
  const headers = { Authorization: `Bearer ${sessionStorage.getItem(KEY)}` };
  const resp = await fetch(path, { ...init, headers, cache: "no-store" });
  if (!resp.ok) {
    let body = {};
    try { body = await resp.json(); } catch { /* not JSON */ }
    throw new ApiError(resp.status, body.code || "HTTP_" + resp.status, body.message || resp.statusText);
  }
  return resp.json();
}

/** An element with attributes and children; strings become text nodes. */
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c !== null && c !== undefined) e.append(typeof c === "string" || typeof c === "number" ? String(c) : c);
  }
  return e;
}

function table(headings, rows) {
  return el("table", {},
    el("thead", {}, el("tr", {}, headings.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c))))));
}

function card(title, ...children) {
  return el("section", { class: "card", "data-card": title }, el("h2", {}, title), ...children);
}

function failure(e) {
  return el("p", { class: "error", role: "alert" }, e instanceof ApiError ? `${e.code}: ${e.message}` : String(e));
}

function when(t) {
  return t ? new Date(t).toLocaleString() : "—";
}

// ---- the key -------------------------------------------------------------

async function start() {
  document.getElementById("key-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const input = document.getElementById("key");
    sessionStorage.setItem(KEY, input.value.trim());
    input.value = "";
    await open();
  });
  document.getElementById("forget").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    location.hash = "";
    location.reload();
  });
  window.addEventListener("hashchange", route);
  await open();
}

/** Learns who the key is; shows the login when there is none or it is refused. */
async function open() {
  const login = document.getElementById("login");
  const error = document.getElementById("login-error");
  if (!sessionStorage.getItem(KEY)) {
    login.hidden = false;
    return;
  }
  try {
    me = await api("/v1/me");
  } catch (e) {
    // Only a refused key is forgotten; a server that is away keeps it.
    if (e instanceof ApiError && e.status === 401) {
      sessionStorage.removeItem(KEY);
      error.textContent = "That key is not known (or was revoked).";
    } else {
      error.textContent = `The server cannot say who this key is now (${e.message || e}); reload to try again.`;
    }
    login.hidden = false;
    return;
  }
  login.hidden = true;
  error.textContent = "";
  document.getElementById("who").textContent = `${me.name} (${me.role})`;
  document.getElementById("forget").hidden = false;
  const nav = document.getElementById("nav");
  nav.replaceChildren(...Object.entries(PAGES)
    .filter(([, p]) => p.roles.includes(me.role))
    .map(([name, p]) => el("a", { href: `#${name}`, "data-page": name }, p.title)));
  nav.hidden = false;
  route();
}

/** Draws the page the hash names, if this key's role may see it. */
function route() {
  if (!me) return;
  leave();
  leave = () => {};
  const [name, query] = (location.hash.slice(1) || "").split("?");
  const allowed = Object.keys(PAGES).filter((n) => PAGES[n].roles.includes(me.role));
  const page = allowed.includes(name) ? name : allowed[0];
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("here", a.dataset.page === page);
  const root = document.getElementById("page");
  root.replaceChildren();
  root.dataset.page = page;
  PAGES[page].draw(root, new URLSearchParams(query || ""));
}

// ---- pages ---------------------------------------------------------------

function every(ms, f) {
  f();
  const t = setInterval(f, ms);
  leave = () => clearInterval(t);
}

function drawOverview(root) {
  const projections = card("Projections");
  const seal = card("Seal and digest");
  const relays = card("Relay");
  root.append(projections, seal, relays);
  every(REFRESH_MS, async () => {
    try {
      const p = await api("/v1/projections");
      projections.replaceChildren(projections.firstChild, table(
        ["projection", "state", "current definition", "behind (events)", "behind (seconds)"],
        p.projections.map((x) => [x.name, x.state, x.definition_current ? "yes" : "no — rebuild",
          String(x.live.lag_events) + (x.live.lag_capped ? "+" : ""), x.live.lag_seconds.toFixed(1)])));
    } catch (e) { projections.replaceChildren(projections.firstChild, failure(e)); }
    try {
      const d = await api("/v1/digest");
      seal.replaceChildren(seal.firstChild, table(["block", "last position", "sealed at", "seal"],
        [[String(d.block), String(d.last_position), when(d.sealed_at), d.seal]]));
    } catch (e) {
      seal.replaceChildren(seal.firstChild, e.code === "NOT_FOUND" ? el("p", { class: "muted" }, "Nothing is sealed yet.") : failure(e));
    }
    try {
      const r = await api("/v1/relays");
      relays.replaceChildren(relays.firstChild, r.relays.length === 0
        ? el("p", { class: "muted" }, "No relay has run against this database.")
        : table(["broker stream", "published", "behind (events)", "last acknowledged"],
          r.relays.map((x) => [x.stream, String(x.published), String(x.lag_events) + (x.lag_capped ? "+" : ""), when(x.updated_at)])));
    } catch (e) { relays.replaceChildren(relays.firstChild, failure(e)); }
  });
}

function drawItem(root, q) {
  const sku = el("input", { name: "sku", required: "", value: q.get("sku") || "" });
  const location = el("input", { name: "location", placeholder: "default", value: q.get("location") || "" });
  const hours = el("input", { name: "hours", type: "number", min: "1", max: "720", value: q.get("hours") || "24" });
  const out = el("div");
  const form = el("form", { class: "inline", onsubmit: (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams({ sku: sku.value.trim(), location: location.value.trim(), hours: hours.value });
    location.value || p.delete("location");
    history.replaceState(null, "", `#item?${p}`);
    showItem(out, sku.value.trim(), location.value.trim(), Number(hours.value) || 24);
  } },
  el("label", {}, "SKU", sku), el("label", {}, "Location", location), el("label", {}, "Hours back", hours),
  el("button", { type: "submit" }, "Show"));
  root.append(card("Item", form, out));
  if (sku.value) showItem(out, sku.value, location.value, Number(hours.value) || 24);
}

async function showItem(out, sku, location, hours) {
  out.replaceChildren(el("p", { class: "muted" }, "Reading…"));
  const at = (extra) => {
    const p = new URLSearchParams(extra);
    if (location) p.set("location", location);
    return `/v1/stock/${encodeURIComponent(sku)}?${p}`;
  };
  let now;
  try {
    now = await api(at({}));
  } catch (e) {
    out.replaceChildren(failure(e));
    return;
  }
  const over = el("div", {}, el("p", { class: "muted" }, "Reading the figures over time…"));
  out.replaceChildren(
    el("div", { class: "figures", "data-figures": "" },
      ...[["on hand", now.on_hand], ["reserved", now.reserved], ["available", now.available], ["confirmed", now.confirmed]]
        .map(([k, v]) => el("div", {}, el("b", {}, String(v)), k))),
    el("p", { class: "muted" }, `as of position ${now.as_of.position ?? "—"} (${when(now.as_of.recorded_at)})`),
    over);
  // The chart is drawn apart from the figures: it may be refused (history
  // archived: HISTORY_ARCHIVED) while the figures stand.
  try {
    const end = Date.now();
    const times = Array.from({ length: CHART_POINTS }, (_, i) => new Date(end - (hours * 3600e3 * (CHART_POINTS - 1 - i)) / (CHART_POINTS - 1)));
    const past = await inTurns(times.map((t) => () => api(at({ as_of: t.toISOString() }))), CHART_READS_AT_ONCE);
    over.replaceChildren(
      chart(times, past, [["on_hand", "#2456c7"], ["reserved", "#c77a24"], ["available", "#1e7b34"]]),
      el("p", { class: "muted" }, `${CHART_POINTS} points over the last ${hours} hours: on hand (blue), reserved (orange), available (green).`));
  } catch (e) { over.replaceChildren(failure(e)); }
}

/** Runs `jobs` (functions returning promises), `atOnce` at a time; their results in order. */
async function inTurns(jobs, atOnce) {
  const results = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await jobs[i]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(atOnce, jobs.length) }, worker));
  return results;
}

/** A line chart of `series` (field, colour) over `times`, as SVG. */
function chart(times, points, series) {
  const NS = "http://www.w3.org/2000/svg";
  const [w, h, pad] = [1000, 220, 30];
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  svg.setAttribute("role", "img");
  const values = points.flatMap((p) => series.map(([f]) => p[f]));
  const top = Math.max(1, ...values);
  const bottom = Math.min(0, ...values);
  const x = (i) => pad + (i * (w - 2 * pad)) / (times.length - 1);
  const y = (v) => h - pad - ((v - bottom) * (h - 2 * pad)) / (top - bottom);
  const axis = document.createElementNS(NS, "line");
  for (const [k, v] of [["x1", pad], ["x2", w - pad], ["y1", y(0)], ["y2", y(0)], ["stroke", "#d9dde5"]]) axis.setAttribute(k, v);
  svg.append(axis);
  for (const [field, colour] of series) {
    const line = document.createElementNS(NS, "polyline");
    line.setAttribute("points", points.map((p, i) => `${x(i).toFixed(1)},${y(p[field]).toFixed(1)}`).join(" "));
    line.setAttribute("fill", "none");
    line.setAttribute("stroke", colour);
    line.setAttribute("stroke-width", "2");
    line.setAttribute("data-series", field);
    svg.append(line);
  }
  const label = document.createElementNS(NS, "text");
  label.setAttribute("x", 2);
  label.setAttribute("y", 14);
  label.setAttribute("font-size", "12");
  label.textContent = String(top);
  svg.append(label);
  return svg;
}

function drawOrder(root, q) {
  const id = el("input", { name: "order_id", required: "", value: q.get("id") || "" });
  const out = el("div");
  const form = el("form", { class: "inline", onsubmit: (ev) => {
    ev.preventDefault();
    history.replaceState(null, "", `#order?${new URLSearchParams({ id: id.value.trim() })}`);
    showOrder(out, id.value.trim());
  } }, el("label", {}, "Order id", id), el("button", { type: "submit" }, "Show"));
  root.append(card("Order", form, out));
  if (id.value) showOrder(out, id.value);
}

async function showOrder(out, orderId) {
  out.replaceChildren(el("p", { class: "muted" }, "Reading…"));
  try {
    const order = await api(`/v1/orders/${encodeURIComponent(orderId)}`);
    const r = await api(`/v1/reservations/${encodeURIComponent(order.reservation_id)}`);
    out.replaceChildren(
      el("p", {}, `Reservation ${order.reservation_id}: `, el("b", { "data-state": "" }, order.state), ` — expires ${when(order.expires_at)}`),
      table(["sku", "location", "quantity", "open", "confirmed", "released", "expired"],
        r.lines.map((l) => [l.sku, l.location, String(l.quantity), String(l.open), String(l.confirmed), String(l.released), String(l.expired)])),
      el("h2", {}, "Timeline"),
      el("ol", { class: "timeline" }, r.events.map((e) =>
        el("li", { "data-event": e.type }, el("b", {}, e.type), ` #${e.seq} at ${when(e.recorded_at)} `, el("span", { class: "muted" }, `position ${e.position}`)))));
  } catch (e) { out.replaceChildren(failure(e)); }
}

function drawExpiring(root) {
  const out = card("Reservations about to expire");
  root.append(out);
  every(REFRESH_MS, async () => {
    try {
      const x = await api("/v1/expiring-reservations");
      const now = Date.now();
      out.replaceChildren(out.firstChild, x.reservations.length === 0
        ? el("p", { class: "muted" }, "No reservation is held.")
        : table(["reservation", "order", "expires at", "in"],
          x.reservations.map((r) => {
            const s = Math.round((new Date(r.expires_at).getTime() - now) / 1000);
            return [r.reservation_id, r.order_id, when(r.expires_at), s <= 0 ? "due" : `${Math.floor(s / 60)}m ${s % 60}s`];
          })),
        x.truncated ? el("p", { class: "muted" }, "Only the soonest are shown.") : null);
    } catch (e) { out.replaceChildren(out.firstChild, failure(e)); }
  });
}

function drawEvents(root) {
  const list = el("table", {}, el("thead", {}, el("tr", {}, ["position", "stream", "type", "recorded at"].map((h) => el("th", {}, h)))), el("tbody"));
  const status = el("p", { class: "muted" }, "Connecting…");
  root.append(card("Live events", status, list));
  const stop = new AbortController();
  leave = () => stop.abort();
  follow(stop.signal, status, list.tBodies[0]);
}

/** Reads the event stream (with the key in a header, which EventSource cannot send), newest first. */
async function follow(signal, status, rows) {
  // From where the log ends now: the page shows what comes next, not the
  // whole history (that is what the other pages and GET /v1/events are for).
  let last = null;
  try {
    last = (await api("/v1/events/head")).cursor;
  } catch (e) {
    status.textContent = `Cannot find the end of the log: ${e.message || e}`;
    status.className = "error";
    return;
  }
  while (!signal.aborted) {
    try {
      const headers = { Authorization: `Bearer ${sessionStorage.getItem(KEY)}` };
      if (last) headers["Last-Event-ID"] = last;
      const resp = await fetch("/v1/events/stream", { headers, signal, cache: "no-store" });
      if (resp.status >= 400 && resp.status < 500 && resp.status !== 429) {
        // Refused (a revoked key, history archived): trying again cannot mend it.
        let body = {};
        try { body = await resp.json(); } catch { /* not JSON */ }
        status.textContent = `Stopped: ${body.code || resp.status} ${body.message || ""}`;
        status.className = "error";
        return;
      }
      if (!resp.ok) throw new ApiError(resp.status, "HTTP_" + resp.status, resp.statusText);
      status.textContent = "Following the log: new events appear at the top.";
      status.className = "ok";
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const id = frame.split("\n").find((l) => l.startsWith("id:"));
          const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
          if (!id || !data) continue;
          const e = JSON.parse(data);
          last = id.slice(3).trim();
          rows.prepend(el("tr", { "data-position": String(e.position) }, [String(e.position), e.stream, e.type, when(e.recorded_at)].map((c) => el("td", {}, c))));
          while (rows.rows.length > MAX_LIVE_ROWS) rows.deleteRow(-1);
        }
      }
      // The server ended the stream (its lifetime, a restart): a pause, then on.
      status.textContent = "Reconnecting…";
      await new Promise((r) => setTimeout(r, 1000));
    } catch (e) {
      if (signal.aborted) return;
      status.textContent = `Reconnecting (${e.message || e})…`;
      status.className = "error";
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

start();
