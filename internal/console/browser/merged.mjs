// A merged incident in the console, in Debian's Chromium, headless: run
// by internal/console/merged_browser_test.go against a real `vigil serve`
// where incident GONE was merged into incident KEPT. The first failed
// assertion ends the run with a non-zero exit and the step's name.
import { chromium } from "playwright-core";
import { strict as assert } from "node:assert";
import { join } from "node:path";

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const BASE = env("BASE_URL");
const KEPT = env("KEPT"), GONE = env("GONE");

let step = "launch";
const log = (s) => { step = s; console.log("step:", s); };
const browser = await chromium.launch({ executablePath: env("CHROMIUM"), args: ["--no-sandbox", "--disable-gpu"] });

try {
  log("sign in as admin");
  const ctx = await browser.newContext({ viewport: { width: 1360, height: 860 }, baseURL: BASE });
  const page = await ctx.newPage();
  page.on("pageerror", (e) => { throw new Error("script error on " + page.url() + ": " + e.message); });
  await page.goto("/signin");
  await page.fill("#token", env("TOKEN_ADMIN"));
  await Promise.all([page.waitForURL(BASE + "/"), page.click("button[type=submit]")]);

  log("queue: the merged incident is neither listed nor counted as New");
  await page.locator(`#rows tr[data-id="${KEPT}"]`).waitFor();
  assert.equal(await page.locator(`#rows tr[data-id="${GONE}"]`).count(), 0, "the merged incident is not in the queue");
  assert.equal(await page.locator("#rows tr").count(), 1, "one incident in the queue");
  assert.equal(Number(await page.textContent(".counts a.st-1 b")), 1, "New counts the incident left, not the merged one");
  await page.screenshot({ path: join(env("SHOT_DIR"), "merged-queue.png") });

  log("a link to the merged incident leads to the one it was merged into");
  await page.goto("/incidents/" + GONE);
  assert.equal(new URL(page.url()).pathname, "/incidents/" + KEPT, "the merged incident's page is the other's");
  assert.match(await page.textContent("p.ok"), new RegExp(`Incident ${GONE} was merged into this one`), "the page says where the link led");
  assert.match(await page.textContent("p.merged"), new RegExp(GONE), "the incident lists what was merged into it");
  assert.equal(await page.locator(".obs li").count() >= 3, true, "the observations of both incidents are here");
  await page.screenshot({ path: join(env("SHOT_DIR"), "merged-incident.png") });
  await ctx.close();
} catch (e) {
  console.error(`FAILED at step "${step}":`, e);
  await browser.close();
  process.exit(1);
}
await browser.close();
