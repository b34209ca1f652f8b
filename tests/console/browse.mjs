// Drives the operator console in a real, headless Chromium (Debian's, through
// playwright-core), page by page, as an auditor and as a reader; takes a
// screenshot of each page into OUT; fails on any check that does not hold,
// any Content-Security-Policy violation and any error on the page.
//
//   node tests/console/browse.mjs BASE OUT
//   (keys in AUDITOR_KEY, READER_KEY, WRITER_KEY; playwright-core under NODE_MODULES)
//
// tests/console.rs runs it against a server it seeded.

import assert from "node:assert/strict";
import { createRequire } from "node:module";

// playwright-core from where tests/console.rs installed it (NODE_MODULES).
const require = createRequire(`${process.env.NODE_MODULES}/`);
const { chromium } = require("playwright-core");

const [base, out] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox"],
});
const problems = [];

// `expected`: console messages this session provokes on purpose (the
// browser reports a refused request as an error).
async function session(name, expected = []) {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  const page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() === "error" && !expected.some((x) => m.text().includes(x))) problems.push(`${name}: console: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`${name}: page error: ${e.message}`));
  // Every request the page makes stays on this server.
  page.on("request", (r) => { if (!r.url().startsWith(base)) problems.push(`${name}: fetched ${r.url()}`); });
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
  });
  return { context, page };
}

async function login(page, key) {
  await page.goto(`${base}/console/`);
  await page.fill("#key", key);
  await page.click("#key-form button");
  await page.waitForSelector("#nav:not([hidden])");
}

async function shot(page, file) {
  await page.screenshot({ path: `${out}/${file}.png`, fullPage: true });
}

// The page itself: served with a strict policy.
{
  const resp = await fetch(`${base}/console/`);
  assert.equal(resp.status, 200);
  const csp = resp.headers.get("content-security-policy") || "";
  for (const d of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]) {
    assert.ok(csp.includes(d), `CSP lacks ${d}: ${csp}`);
  }
  assert.ok(!csp.includes("unsafe-inline") && !csp.includes("unsafe-eval"), csp);
  assert.equal(resp.headers.get("x-content-type-options"), "nosniff");
}

// A wrong key: refused, nothing shown, nothing kept.
{
  const { context, page } = await session("wrong key", ["status of 401"]);
  await page.goto(`${base}/console/`);
  await page.fill("#key", "sk_made_up");
  await page.click("#key-form button");
  await page.waitForSelector("#login-error:text('not known')");
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  assert.ok(await page.isHidden("#nav"));
  await shot(page, "0-login-refused");
  await context.close();
}

// An auditor sees every page.
{
  const { context, page } = await session("auditor");
  await login(page, process.env.AUDITOR_KEY);
  const nav = await page.$$eval("#nav a", (as) => as.map((a) => a.dataset.page));
  assert.deepEqual(nav, ["overview", "item", "order", "expiring", "events"]);
  // The key is kept for this tab only.
  assert.equal(await page.evaluate(() => localStorage.length), 0);
  assert.equal(await page.evaluate(() => sessionStorage.getItem("stockledger.key")), process.env.AUDITOR_KEY);

  await page.waitForSelector("[data-card='Projections'] td");
  const projections = await page.$$eval("[data-card='Projections'] tbody tr td:first-child", (t) => t.map((x) => x.textContent));
  assert.ok(projections.includes("stock_levels"), projections.join());
  await page.waitForSelector("[data-card='Seal and digest'] td");
  await page.waitForSelector("[data-card='Relay'] p, [data-card='Relay'] td");
  await shot(page, "1-overview");

  await page.goto(`${base}/console/#item?sku=apple`);
  await page.waitForSelector("[data-figures]");
  const figures = await page.textContent("[data-figures]");
  assert.ok(figures.includes("on hand"), figures);
  // The chart comes after the figures.
  await page.waitForSelector("svg.chart polyline");
  assert.equal(await page.$$eval("svg.chart polyline", (l) => l.length), 3);
  await shot(page, "2-item");

  await page.goto(`${base}/console/#order?id=o-1`);
  await page.waitForSelector("ol.timeline li");
  const steps = await page.$$eval("ol.timeline li", (l) => l.map((x) => x.dataset.event));
  assert.deepEqual(steps, ["ReservationCreated", "ReservationConfirmed"], steps.join());
  await shot(page, "3-order");

  await page.click("#nav a[data-page='expiring']");
  await page.waitForSelector("[data-card='Reservations about to expire'] td");
  const held = await page.textContent("[data-card='Reservations about to expire'] tbody");
  assert.ok(held.includes("r-held"), held);
  await shot(page, "4-expiring");

  await page.click("#nav a[data-page='events']");
  await page.waitForSelector("p.ok:text('Following the log')");
  // It follows from where the log ends: no history on the page.
  const before = await page.$$eval("tr[data-position]", (r) => r.length);
  assert.equal(before, 0);
  // A command sent now shows up live.
  const sent = await fetch(`${base}/v1/stock/receipts`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${process.env.WRITER_KEY}` },
    body: JSON.stringify({ receipt_id: "live-1", sku: "pear", quantity: 1 }),
  });
  assert.equal(sent.status, 201);
  await page.waitForFunction((n) => document.querySelectorAll("tr[data-position]").length > n, before);
  const newest = await page.textContent("tbody tr:first-child");
  assert.ok(newest.includes("receipt:live-1"), newest);
  await shot(page, "5-events");
  await context.close();
}

// A reader sees only what a reader may read, even when it asks for more.
{
  const { context, page } = await session("reader");
  await login(page, process.env.READER_KEY);
  const nav = await page.$$eval("#nav a", (as) => as.map((a) => a.dataset.page));
  assert.deepEqual(nav, ["item", "order"]);
  await page.goto(`${base}/console/#events`);
  await page.reload();
  await page.waitForSelector("#page[data-page='item']");
  assert.equal(await page.$$eval("tr[data-position]", (r) => r.length), 0);
  await shot(page, "6-reader");
  await page.click("#forget");
  await page.waitForSelector("#login:not([hidden])");
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  await context.close();
}

await browser.close();
if (problems.length) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log("console: every page checked");
