// OIDC sign-in in Debian's Chromium, headless: run by
// internal/console/oidc_browser_test.go against Vigil's console and a
// real OpenID Provider (zitadel/oidc) on another site. Every step asserts
// what the user sees; the first failure ends the run with a non-zero exit
// and the step's name.
import { chromium } from "playwright-core";
import { strict as assert } from "node:assert";
import { join } from "node:path";

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const BASE = env("BASE_URL");
const ISSUER = env("ISSUER");

let step = "launch";
const log = (s) => { step = s; console.log("step:", s); };
const browser = await chromium.launch({ executablePath: env("CHROMIUM"), args: ["--no-sandbox", "--disable-gpu"] });

try {
  const ctx = await browser.newContext({ viewport: { width: 1360, height: 860 }, baseURL: BASE });
  const page = await ctx.newPage();
  page.on("pageerror", (e) => { throw new Error("script error on " + page.url() + ": " + e.message); });

  log("the sign-in page offers the provider");
  await page.goto("/");
  assert.match(page.url(), /\/signin$/, "a visitor without a session is sent to sign in");
  assert.equal((await page.textContent("#signin-oidc")).trim(), "Sign in with Example IdP");
  await page.screenshot({ path: join(SHOTS(), "signin-oidc.png") });

  log("to the provider's login form");
  await Promise.all([page.waitForURL((u) => u.href.startsWith(ISSUER + "/login/username")), page.click("#signin-oidc")]);
  const flow = (await ctx.cookies(BASE + "/signin/oidc/callback")).find((c) => c.name === "vigil_oidc");
  assert.ok(flow, "the flow cookie is set");
  assert.equal(flow.httpOnly, true, "flow cookie HttpOnly");
  assert.equal(flow.sameSite, "Lax", "flow cookie SameSite=Lax");

  log("signed in at the provider, back on the queue");
  await page.fill("#username", env("OIDC_USER"));
  await page.fill("#password", env("OIDC_PASSWORD"));
  await Promise.all([page.waitForURL(BASE + "/"), page.click("button[type=submit]")]);
  const who = await page.textContent(".who");
  assert.match(who, /id1/, "signed in as the provider's user");
  assert.match(who, /acme/, "in the org of the provider's claims");
  const cookies = await ctx.cookies(BASE);
  const session = cookies.find((c) => c.name === "vigil_session");
  assert.ok(session, "the session cookie is set");
  assert.equal(session.sameSite, "Strict", "session cookie SameSite=Strict");
  assert.equal(session.httpOnly, true, "session cookie HttpOnly");
  assert.ok(!(await ctx.cookies(BASE + "/signin/oidc/callback")).find((c) => c.name === "vigil_oidc"), "the flow cookie is cleared");

  log("sign out");
  await Promise.all([page.waitForURL(BASE + "/signin"), page.click("#signout")]);
  assert.ok(!(await ctx.cookies(BASE)).find((c) => c.name === "vigil_session"), "the session cookie is cleared");
  await page.goto("/");
  assert.match(page.url(), /\/signin$/, "signed out: / asks to sign in");
  console.log("ok");
} catch (e) {
  console.error(`FAILED at step "${step}":`, e);
  process.exitCode = 1;
} finally {
  await browser.close();
}

function SHOTS() { return env("SHOT_DIR"); }
