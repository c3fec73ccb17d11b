// A roll-up and an incident raised from it, in Debian's Chromium,
// headless: run by internal/console/rollup_browser_test.go against a real
// `vigil serve` where SOURCES scanners rolled up into incident ROLLUP and
// RAISED_IP, which also brute-forced SSH, stands apart in RAISED. The
// first failed assertion ends the run with a non-zero exit and the step's
// name.
import { strict as assert } from "node:assert";
import { BASE, env, log, run, shot, signIn } from "./harness.mjs";

const ROLLUP = env("ROLLUP"), RAISED = env("RAISED"), RAISED_IP = env("RAISED_IP");
const SOURCES = Number(env("SOURCES"));
const HEAVIEST = env("HEAVIEST"), HEAVIEST_COUNT = Number(env("HEAVIEST_COUNT"));
const TITLE = `Suricata: ET SCAN Potential SSH Scan from ${SOURCES} sources`;

const counts = async (page) => (await page.locator("#sources td.cnt").allTextContents()).map(Number);
const values = async (page) => page.locator("#sources a.val").allTextContents();

await run(async (browser) => {
  log("sign in as admin");
  const { ctx, page } = await signIn(browser, env("TOKEN_ADMIN"), { viewport: { width: 1360, height: 1000 } });

  log("queue: the roll-up and the raised incident, each marked");
  const rollRow = page.locator(`#rows tr[data-id="${ROLLUP}"]`);
  await rollRow.waitFor();
  assert.equal(await page.locator("#rows tr").count(), 2, "two incidents, not one per scanner");
  assert.equal(await rollRow.locator("td.title a").textContent(), TITLE);
  assert.equal(await rollRow.locator(".tag.rollup").textContent(), "roll-up", "the roll-up is marked as one");
  assert.equal(await page.locator(`#rows tr[data-id="${RAISED}"] .tag.raised`).textContent(), "raised: risk", "the raised incident says why");
  assert.equal(await page.locator(`#rows tr[data-id="${RAISED}"] .tag.rollup`).count(), 0, "the raised incident is no roll-up");

  log("roll-up page: its detection, sources, findings and window");
  await rollRow.locator("td.title a").click();
  await page.waitForURL(BASE + "/incidents/" + ROLLUP);
  const head = await page.textContent("#rollup");
  assert.match(head, /Roll-up of Suricata: ET SCAN Potential SSH Scan \(suricata_alert\)/, "what fired");
  assert.match(head, new RegExp(`${SOURCES} sources, \\d+ findings`), "its sources and findings");
  // The window is a day: from the scans' first recording to a day later.
  const win = await page.textContent("#rollup .win");
  const m = win.match(/^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ?) – (\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ)$/);
  assert.ok(m, `window ${win} is two times`);
  const span = Date.parse(m[2].replace(" ", "T")) - Date.parse(m[1].replace(" ", "T").replace(/Z?$/, "Z"));
  assert.equal(span, 24 * 3600 * 1000, `window ${win} is the org's 1440 minutes`);

  log("roll-up page: sources heaviest first, each with its count, a page at a time");
  assert.match(await page.textContent("#sources h2"), new RegExp(`Sources ${SOURCES}, heaviest first`));
  let c = await counts(page);
  assert.equal(c.length, 50, "a page of 50 sources");
  assert.equal((await values(page))[0], HEAVIEST, "the heaviest source first");
  assert.equal(c[0], HEAVIEST_COUNT, "with its count");
  assert.deepEqual(c, [...c].sort((a, b) => b - a), "counts never grow down the page");
  assert.ok(!(await values(page)).includes(RAISED_IP), "the raised scanner left the roll-up");
  assert.match(await page.textContent("#sources .pager"), new RegExp(`1–50 of ${SOURCES}`));
  await shot(page, "rollup");
  const lastOfFirst = c[c.length - 1];
  await Promise.all([page.waitForURL(/sources_offset=50/), page.click("#sources .pager a[rel=next]")]);
  c = await counts(page);
  assert.equal(c.length, SOURCES - 50, "the rest on the next page");
  assert.ok(c[0] <= lastOfFirst && c.every((x, i) => i === 0 || x <= c[i - 1]), "the next page goes on lighter");
  assert.match(await page.textContent("#sources .pager"), new RegExp(`51–${SOURCES} of ${SOURCES}`));
  assert.ok(new URL(page.url()).hash === "#sources", "the pager keeps the section in view");

  log("raised incident: why, and the roll-up it left");
  await page.goto("/incidents/" + RAISED);
  const why = await page.textContent("#raised-by");
  assert.match(why, new RegExp(`Raised on its own \\(risk\\): IP ${RAISED_IP.replaceAll(".", "\\.")} reached a risk of \\d+ within 24 h \\(the org's threshold: 100\\)`));
  assert.equal(await page.locator("#sources").count(), 0, "no sources section on an incident that is no roll-up");
  assert.equal(await page.locator("#raised-by a").textContent(), TITLE, "the roll-up it left, by its title");
  assert.ok((await page.locator(".obs li").allTextContents()).some((t) => /ET SCAN Potential SSH Scan/.test(t)), "its scan came with it");
  await shot(page, "incident-raised");
  await Promise.all([page.waitForURL(BASE + "/incidents/" + ROLLUP), page.click("#raised-by a")]);

  log("settings: the org's roll-up and risk settings, a bad one named, a good one saved");
  await page.goto("/settings");
  const val = (n) => page.inputValue(`input[name=${n}]`);
  assert.deepEqual([await val("rollup_threshold"), await val("rollup_window_minutes"), await val("risk_threshold"), await val("risk_detections")],
    ["20", "1440", "100", "3"], "the defaults");
  const sevBox = (sev) => page.locator(`input[name=rollup_severities][value=${sev}]`);
  assert.deepEqual(await Promise.all(["low", "medium", "high", "critical"].map((v) => sevBox(v).isChecked())), [true, true, false, false],
    "low and medium roll up");
  await page.fill("input[name=rollup_threshold]", "1");
  await sevBox("medium").uncheck();
  await page.click("form.editor button[type=submit]");
  assert.match(await page.textContent(".alert"), /rollup_threshold/, "a threshold of 1 is named");
  assert.equal(await val("rollup_threshold"), "1", "the form comes back as typed");
  assert.equal(await sevBox("medium").isChecked(), false, "with its severities as typed");
  await page.fill("input[name=rollup_threshold]", "30");
  await page.fill("input[name=risk_detections]", "4");
  await Promise.all([page.waitForURL(/\/settings\?saved=1/), page.click("form.editor button[type=submit]")]);
  const saved = await (await fetch(BASE + "/v1/enrichment-settings", { headers: { Authorization: "Bearer " + env("TOKEN_ADMIN") } })).json();
  assert.deepEqual([saved.data.rollup_threshold, saved.data.rollup_severities, saved.data.risk_detections, saved.data.rollup_window_minutes],
    [30, ["low"], 4, 1440], "saved through the API");
  assert.equal(await val("rollup_threshold"), "30");
  await shot(page.locator("#rollups"), "settings-rollups");
  await ctx.close();
});
