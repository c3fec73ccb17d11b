// What the console's browser tests (console.mjs, merged.mjs, oidc.mjs,
// rollup.mjs) share: run by the tests of internal/console with BASE_URL,
// CHROMIUM and SHOT_DIR set, each drives Debian's Chromium, headless,
// through playwright-core, naming each step as it starts; the first
// failed assertion ends the run with a non-zero exit and the step's name.
import { chromium } from "playwright-core";
import { strict as assert } from "node:assert";
import { join } from "node:path";

// env is the environment variable k, which must be set.
export const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
export const BASE = env("BASE_URL");

let step = "launch";
// log names the step that starts.
export const log = (s) => { step = s; console.log("step:", s); };

// shot saves a screenshot of a page (or of a part of one) as SHOT_DIR/name.png.
export const shot = (target, name) => target.screenshot({ path: join(env("SHOT_DIR"), name + ".png") });

// newPage opens a browser context on BASE (options over a 1360×860
// viewport) and a page in it, whose script errors fail the run.
export async function newPage(browser, options = {}) {
  const ctx = await browser.newContext({ viewport: { width: 1360, height: 860 }, baseURL: BASE, ...options });
  const page = await ctx.newPage();
  page.on("pageerror", (e) => { throw new Error("script error on " + page.url() + ": " + e.message); });
  return { ctx, page };
}

// signIn opens a page (newPage), is sent from the queue to sign in, and
// signs in with token, back on the queue.
export async function signIn(browser, token, options = {}) {
  const { ctx, page } = await newPage(browser, options);
  await page.goto("/");
  assert.match(page.url(), /\/signin$/, "a visitor without a session is sent to sign in");
  await page.fill("#token", token);
  await Promise.all([page.waitForURL(BASE + "/"), page.click("button[type=submit]")]);
  return { ctx, page };
}

// run launches Chromium and runs body with it, then prints "ok"; a
// failure prints the step it failed at and sets a non-zero exit.
export async function run(body) {
  const browser = await chromium.launch({ executablePath: env("CHROMIUM"), args: ["--no-sandbox", "--disable-gpu"] });
  try {
    await body(browser);
    console.log("ok");
  } catch (e) {
    console.error(`FAILED at step "${step}": ${e.stack || e}`);
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
}
