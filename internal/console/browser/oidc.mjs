// OIDC sign-in in Debian's Chromium, headless: run by
// internal/console/oidc_browser_test.go against Vigil's console and a
// real OpenID Provider (zitadel/oidc) on another site. Every step asserts
// what the user sees; the first failure ends the run with a non-zero exit
// and the step's name.
import { strict as assert } from "node:assert";
import { BASE, env, log, newPage, run, shot } from "./harness.mjs";

const ISSUER = env("ISSUER");

await run(async (browser) => {
  const { ctx, page } = await newPage(browser);

  log("the sign-in page offers the provider");
  await page.goto("/");
  assert.match(page.url(), /\/signin$/, "a visitor without a session is sent to sign in");
  assert.equal((await page.textContent("#signin-oidc")).trim(), "Sign in with Example IdP");
  await shot(page, "signin-oidc");

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
});
