// A merged incident in the console, in Debian's Chromium, headless: run
// by internal/console/merged_browser_test.go against a real `vigil serve`
// where incident GONE was merged into incident KEPT. The first failed
// assertion ends the run with a non-zero exit and the step's name.
import { strict as assert } from "node:assert";
import { env, log, run, shot, signIn } from "./harness.mjs";

const KEPT = env("KEPT"), GONE = env("GONE");

await run(async (browser) => {
  log("sign in as admin");
  const { ctx, page } = await signIn(browser, env("TOKEN_ADMIN"));

  log("queue: the merged incident is neither listed nor counted as New");
  await page.locator(`#rows tr[data-id="${KEPT}"]`).waitFor();
  assert.equal(await page.locator(`#rows tr[data-id="${GONE}"]`).count(), 0, "the merged incident is not in the queue");
  assert.equal(await page.locator("#rows tr").count(), 1, "one incident in the queue");
  assert.equal(Number(await page.textContent(".counts a.st-1 b")), 1, "New counts the incident left, not the merged one");
  await shot(page, "merged-queue");

  log("a link to the merged incident leads to the one it was merged into");
  await page.goto("/incidents/" + GONE);
  assert.equal(new URL(page.url()).pathname, "/incidents/" + KEPT, "the merged incident's page is the other's");
  assert.match(await page.textContent("p.ok"), new RegExp(`Incident ${GONE} was merged into this one`), "the page says where the link led");
  assert.match(await page.textContent("p.merged"), new RegExp(GONE), "the incident lists what was merged into it");
  assert.equal(await page.locator(".obs li").count() >= 3, true, "the observations of both incidents are here");
  await shot(page, "merged-incident");
  await ctx.close();
});
