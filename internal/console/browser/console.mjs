// The console end to end in Debian's Chromium, headless: run by
// internal/console/browser_test.go against a real `vigil serve` fed with
// a real auth log. Every step asserts what an analyst would see; the
// first failure ends the run with a non-zero exit and the step's name.
import { strict as assert } from "node:assert";
import { BASE, env, log, newPage, run, shot, signIn as harnessSignIn } from "./harness.mjs";

const IP = env("ATTACKER_IP");
const FIRST_ATTEMPT = env("FIRST_ATTEMPT");
const ATTACK_ARTIFACTS = Number(env("ATTACK_ARTIFACTS"));
const BEACON = env("BEACON_INCIDENT");
const ATTACK_FIRST = new Date(env("ATTACK_FIRST"));
const ATTACK_LAST = new Date(env("ATTACK_LAST"));
// utc writes a time as the console does ("2026-07-10 16:01:43").
const utc = (d) => d.toISOString().slice(0, 19).replace("T", " ");
const SENSORS = Number(env("SENSORS"));
const tokens = { admin: env("TOKEN_ADMIN"), reader: env("TOKEN_READER"), other: env("TOKEN_OTHER"), short: env("TOKEN_SHORT") };

await run(async (browser) => {
  // signIn signs in with token (harness.mjs), dialogs accepted and the
  // last one's message kept in page.lastDialog.
  const signIn = async (token, options = {}) => {
    const s = await harnessSignIn(browser, token, options);
    s.page.on("dialog", (d) => { s.page.lastDialog = d.message(); d.accept(); });
    return s;
  };

  // A session whose token lasts seconds, checked at the end.
  log("sign in with a short-lived token");
  const short = await signIn(tokens.short);

  log("sign in as admin");
  {
    const { ctx, page: p } = await newPage(browser);
    await p.goto("/signin");
    await p.fill("#token", "not-a-token");
    await p.click("button[type=submit]");
    assert.match(await p.textContent(".alert"), /refused this token/, "a bad token is refused with a message");
    await p.fill("#token", "");
    await shot(p, "signin");
    await ctx.close();
  }
  const { ctx, page } = await signIn(tokens.admin);
  const cookie = (await ctx.cookies()).find((c) => c.name === "vigil_session");
  assert.ok(cookie, "the session cookie is set");
  assert.equal(cookie.httpOnly, true, "HttpOnly");
  assert.equal(cookie.sameSite, "Strict", "SameSite=Strict");
  assert.ok(cookie.expires > Date.now() / 1000, "the cookie expires with the token");

  log("queue: the brute force is listed, with counts per status");
  const row = page.locator("#rows tr", { hasText: `SSH brute force from ${IP}` });
  await row.waitFor();
  const newCount = Number(await page.textContent(".counts a.st-1 b"));
  assert.ok(newCount >= 2, `New count ${newCount}`);

  log("queue: when the attack happened, beside when Vigil saw it");
  {
    const happened = await row.locator("td.happened").textContent();
    assert.ok(happened.includes(utc(ATTACK_FIRST)) && happened.includes(utc(ATTACK_LAST).slice(11)), "its first and last event times: " + happened);
    assert.match(happened, /\d+ days ago/, "it happened days before it was sent: " + happened);
    assert.match(await row.locator("td.seen").textContent(), /just now|min ago/, "Vigil saw it just now");
  }
  await shot(page, "queue");

  log("queue: sorted by when it happened, and filtered by it");
  {
    await page.selectOption("select[name=sort]", "first_event");
    await Promise.all([page.waitForURL(/sort=first_event/), page.click(".filters button[type=submit]")]);
    const firsts = await page.locator("#rows td.happened").evaluateAll((tds) => tds.map((td) => td.dataset.first || ""));
    assert.ok(firsts.length >= 3, "rows: " + firsts.length);
    for (let i = 1; i < firsts.length; i++) {
      assert.ok(firsts[i] === "" || (firsts[i - 1] !== "" && firsts[i - 1] >= firsts[i]), `newest first event first: ${firsts[i - 1]} before ${firsts[i]}`);
    }
    // The attack's first second, typed as a browser's datetime-local value.
    const from = ATTACK_FIRST, to = new Date(ATTACK_FIRST.getTime() + 1000);
    await page.fill("input[name=event_start]", from.toISOString().slice(0, 19));
    await page.fill("input[name=event_end]", to.toISOString().slice(0, 19));
    await Promise.all([page.waitForURL(/event_start=/), page.click(".filters button[type=submit]")]);
    assert.equal(await page.locator("#rows tr", { hasText: `SSH brute force from ${IP} ` }).count(), 1, "the attack happened then");
    const spans = await page.locator("#rows td.happened").evaluateAll((tds) => tds.map((td) => [td.dataset.first, td.dataset.last]));
    for (const [f, l] of spans) {
      assert.ok(f < utc(to) + "Z" && l >= utc(from) + "Z", `a row that did not happen then: ${f} – ${l}`);
    }
    assert.equal(await page.inputValue("input[name=event_start]"), from.toISOString().slice(0, 19), "the form keeps the filter");
    await page.goto("/");
  }

  log("queue: filter by text and severity sort");
  await page.fill("#qbox", IP);
  await Promise.all([page.waitForURL(/q=/), page.press("#qbox", "Enter")]);
  assert.equal(await page.locator("#rows tr").count(), 1, "the text filter keeps the one incident");
  await page.selectOption("select[name=sort]", "severity");
  await Promise.all([page.waitForURL(/sort=severity/), page.click(".filters button[type=submit]")]);

  log("queue: keyboard j + Enter opens the incident");
  await page.keyboard.press("j");
  await Promise.all([page.waitForURL(/\/incidents\//), page.keyboard.press("Enter")]);
  const incidentURL = page.url();

  log("incident: when it happened, beside when Vigil saw it");
  {
    const facts = await page.textContent(".head .facts");
    assert.ok(facts.includes(`happened ${utc(ATTACK_FIRST)}–${utc(ATTACK_LAST).slice(11)}Z`), "the header says when it happened: " + facts);
    assert.ok(facts.includes("seen by Vigil " + utc(new Date()).slice(0, 10)), "and when Vigil saw it (today): " + facts);
  }

  log("incident: observations, nodes with roles and enrichment, graph, artifacts");
  await page.locator(".obs li", { hasText: "auth" }).first().waitFor();
  const ipNode = page.locator(".nodes li", { hasText: IP });
  assert.match(await ipNode.textContent(), /key/, "the attacker's address is a key node");
  assert.ok(await page.locator(".nodes li .role.ctx").count() >= 1, "the attacked host is context");
  assert.ok(await page.locator("svg.graph line").count() >= 1, "the graph links observations and nodes");
  const arts = await page.locator("article.art").count();
  assert.ok(arts >= 5, `artifacts shown: ${arts}`);
  assert.match(await page.locator("article.art pre.raw").first().textContent(), new RegExp(IP.replaceAll(".", "\\.")));
  await page.locator("article.art details summary").first().click();
  assert.match(await page.locator("article.art dl.fields").first().textContent(), /source\.ip/);
  await shot(page, "incident");

  log("incident: every artifact is reachable, a page at a time, down to the first attempt");
  {
    const pager = page.locator("#artifacts .pager").first();
    assert.match(await pager.textContent(), new RegExp(`1–50 of ${ATTACK_ARTIFACTS}\\b`), "the artifacts say how many there are");
    assert.equal(await page.locator("#artifacts article.art").count(), 50, "a page of 50");
    // The oldest page: its own link, or the next when it is the next.
    await Promise.all([page.waitForURL(/artifacts_offset=\d+#artifacts$/), pager.locator("a.end, a[rel=next]").last().click()]);
    const last = Math.floor((ATTACK_ARTIFACTS - 1) / 50) * 50;
    assert.equal(await page.locator("#artifacts article.art").count(), ATTACK_ARTIFACTS - last, "the rest on the last page");
    assert.match(await page.locator("#artifacts .pager").first().textContent(), new RegExp(`${last + 1}–${ATTACK_ARTIFACTS} of ${ATTACK_ARTIFACTS}`));
    assert.equal(await page.locator("#artifacts article.art pre.raw").last().textContent(), FIRST_ATTEMPT, "the last artifact is the first attempt");
    await shot(page, "incident-artifacts");
    await Promise.all([page.waitForURL((u) => !u.searchParams.has("artifacts_offset")), page.locator("#artifacts .pager a[rel=prev]").first().click()]);
    assert.match(await page.locator("#artifacts .pager").first().textContent(), /1–50 of/, "back to the newest");
  }

  log("incident: observations and nodes page on their own");
  {
    await page.goto("/incidents/" + BEACON);
    const obsPager = page.locator("#observations .pager");
    assert.match(await obsPager.textContent(), new RegExp(`1–50 of ${SENSORS}\\b`));
    assert.equal(await page.locator("#observations .obs li").count(), 50);
    assert.match(await page.locator("#nodes .pager").textContent(), new RegExp(`1–50 of ${SENSORS + 1}\\b`));
    assert.equal(await page.locator("#nodes .nodes li").count(), 50);
    await Promise.all([page.waitForURL(/observations_offset=50#observations$/), obsPager.locator("a[rel=next]").click()]);
    assert.equal(await page.locator("#observations .obs li").count(), SENSORS - 50, "the other observations");
    assert.match(await page.textContent("#observations"), new RegExp(`sensor-${SENSORS - 1}\\b`));
    assert.doesNotMatch(await page.textContent("#observations"), /sensor-00\b/);
    await Promise.all([page.waitForURL(/nodes_offset=50&.*#nodes$/), page.locator("#nodes .pager a[rel=next]").click()]);
    assert.match(page.url(), /observations_offset=50/, "the observations stay on their page");
    assert.equal(await page.locator("#nodes .nodes li").count(), SENSORS + 1 - 50, "the other nodes");
    assert.equal(await page.locator("#observations .obs li").count(), SENSORS - 50);
    await page.goto(incidentURL);
  }

  log("incident: mark it resolved, confirming the classification");
  await Promise.all([page.waitForURL(/changed=1/), page.click("#status-actions button.st-3")]);
  assert.match(page.lastDialog, /Resolved\?.*true positive/, "the confirmation names the classification: " + page.lastDialog);
  assert.match(await page.textContent(".head .facts"), /Resolved.*true positive/s);
  assert.match(await page.textContent(".history"), /moved it from New to Resolved/);

  log("incident: assign, tag and comment in Markdown; the history lists each change");
  await page.fill("#caseform input[name=assignee]", "bob");
  await page.fill("#caseform input[name=tags]", "vip, brute-force");
  await Promise.all([page.waitForURL(/saved=case/), page.click("#caseform button[type=submit]")]);
  assert.equal(await page.textContent(".case .assignee"), "bob");
  assert.deepEqual(await page.locator(".case a.tag").allTextContents(), ["brute-force", "vip"]);
  await page.fill("#commentform textarea", "**Blocked** at the edge firewall.\n\n<script>window.pwned = 1</script>\n[details](javascript:window.pwned=2)");
  await Promise.all([page.waitForURL(/saved=comment/), page.click("#commentform button[type=submit]")]);
  assert.equal(await page.textContent(".comment .md strong"), "Blocked", "the comment's Markdown is rendered");
  assert.equal(await page.evaluate(() => window.pwned), undefined, "a script in a comment does not run");
  assert.equal(await page.locator(".comment .md script").count(), 0, "no script element from a comment");
  const href = (await page.locator(".comment .md a", { hasText: "details" }).getAttribute("href")) || "";
  assert.ok(!/^\s*javascript:/i.test(href), "a javascript: link in a comment loses its target: " + href);
  const events = await page.textContent("#timeline .events");
  for (const want of [/system opened it/, /moved it from New to Resolved/, /assigned it to bob/, /tagged it \+brute-force \+vip/, /alice commented/]) {
    assert.match(events, want, "history: " + want);
  }
  await page.locator("#case").scrollIntoViewIfNeeded();
  await shot(page, "incident-case");

  log("incident: the incidents of the attacker's address");
  await Promise.all([page.waitForURL(/node=/), page.locator(".nodes li", { hasText: IP }).locator("a.inc").click()]);
  assert.match(await page.textContent("#nodefilter"), new RegExp(IP.replaceAll(".", "\\.")));
  assert.ok(await page.locator("#rows tr", { hasText: `SSH brute force from ${IP}` }).count() === 1, "its brute force is listed");
  assert.match(await page.textContent("#rows"), /@bob/, "the queue shows the assignee");
  await page.goto(incidentURL);

  log("search for the attacker's address, terms highlighted");
  await page.goto("/search?query=" + encodeURIComponent(IP));
  const hits = await page.locator("article.art").count();
  assert.ok(hits >= 5, `search hits ${hits}`);
  assert.equal(await page.locator("article.art mark").first().textContent(), IP, "the address is marked in the line");
  assert.match(await page.textContent(".pager"), /of \d+/);
  await shot(page, "search");
  log("search: a click on a parsed user name searches for it");
  await page.locator("article.art details summary").first().click();
  const userLink = page.locator("article.art dl.fields dd a[title='Search artifacts for it']").first();
  const value = await userLink.textContent();
  await Promise.all([page.waitForURL(/\/search\?query=/), userLink.click()]);
  assert.ok(await page.locator("article.art").count() >= 1, "the clicked value finds artifacts: " + value);

  log("search: enrichment beside an address (MaxMind's test databases)");
  await page.goto("/search?query=" + encodeURIComponent("89.160.20.156"));
  assert.match(await page.locator("article.art .enrl").first().textContent(), /89\.160\.20\.156\s+SE/, "GeoIP country beside the address");

  log("rules: the form shows the conditions as rows, a bad one typed as JSON is named");
  await page.goto("/rules/new");
  const rows = page.locator("#cond-rows .cond-row");
  assert.equal(await rows.count(), 2, "the example as two rows");
  assert.equal(await rows.nth(0).locator("input[name=cond_field]").inputValue(), "observation.type");
  assert.equal(await rows.nth(1).locator("input[name=cond_value]").inputValue(), "20");
  await page.fill("input[name=name]", "Large brute force");
  await page.fill("input[name=priority]", "10");
  await page.selectOption("select[name=severity]", "critical");
  await page.fill("textarea[name=conditions]", '{"all": [{"field": "observation.type", "op": "equals", "value": "auth"}]}');
  await page.click("#preview");
  assert.match(await page.textContent("#cond-err"), /conditions\.all\[0\]\.op/, "the error names the bad part");
  assert.equal(await page.locator("#cond-complex").count(), 1, "an operator the form does not offer: the JSON is the editor");

  log("rules: built in the form, the JSON follows; the preview covers open and recently closed incidents; saved");
  await page.fill("textarea[name=conditions]", "{}");
  await page.locator("#cond-rows").waitFor({ state: "attached" }); // the rows follow the JSON: none
  assert.equal(await rows.count(), 0);
  const addRow = async (field, op, value) => {
    await page.click("#cond-add");
    const r = rows.last();
    await r.locator("input[name=cond_field]").fill(field);
    await r.locator("select[name=cond_op]").selectOption(op);
    await r.locator("input[name=cond_value]").fill(value);
  };
  await addRow("observation.type", "eq", "auth");
  await addRow("incident.node_count", "lt", "99");
  await addRow("incident.artifact_count", "gte", "20");
  await rows.nth(1).locator(".cond-del").click();
  const built = { all: [{ field: "observation.type", op: "eq", value: "auth" }, { field: "incident.artifact_count", op: "gte", value: 20 }] };
  const jsonIs = (want) => page.waitForFunction((w) => {
    try { return JSON.stringify(JSON.parse(document.querySelector("textarea[name=conditions]").value)) === w; } catch { return false; }
  }, JSON.stringify(want));
  await jsonIs(built);
  await page.click("#preview");
  await page.locator("#preview-result").waitFor();
  assert.ok(await page.locator("#preview-open tbody tr").count() >= 1, "the preview lists the large open brute forces");
  assert.ok(!(await page.textContent("#preview-open")).includes(`from ${IP} `), "the resolved incident is not among the open ones");
  assert.ok((await page.textContent("#preview-closed")).includes(`from ${IP} `), "it is among the recently closed it would have matched");
  assert.match(await page.textContent("#preview-covers"), /open incidents,\s+and the \d+ most recently active of the \d+ incidents closed since \d{4}-\d\d-\d\d .*\(the last 30 days\)/s,
    "the preview says what it covers");
  assert.deepEqual(JSON.parse(await page.inputValue("textarea[name=conditions]")), built, "the preview keeps the conditions");
  await shot(page, "rule-preview");
  await Promise.all([page.waitForURL(/\/rules\?saved=/), page.click("#save")]);
  assert.ok(await page.locator("table.list tr", { hasText: "Large brute force" }).count() === 1);
  await shot(page, "rules");

  log("rules: a saved rule opens as rows; JSON typed by an expert becomes rows, or says it is more than rows");
  await Promise.all([page.waitForURL(/\/rules\/[0-9a-f-]{36}$/), page.locator("table.list a", { hasText: "Large brute force" }).click()]);
  assert.equal(await rows.count(), 2);
  assert.equal(await rows.nth(1).locator("select[name=cond_op]").inputValue(), "gte");
  assert.equal(await rows.nth(1).locator("input[name=cond_value]").inputValue(), "20");
  await page.fill("textarea[name=conditions]", '{"any": [{"field": "artifact.source", "op": "eq", "value": "auth"}, {"field": "node.value", "op": "cidr", "value": ["10.0.0.0/8", "192.168.0.0/16"]}, {"field": "event.user.name", "op": "exists"}]}');
  await page.waitForFunction(() => document.querySelectorAll("#cond-rows .cond-row").length === 3);
  assert.equal(await page.inputValue("select[name=match]"), "any");
  assert.equal(await rows.nth(1).locator("input[name=cond_value]").inputValue(), "10.0.0.0/8, 192.168.0.0/16");
  await page.fill("textarea[name=conditions]", '{"not": {"field": "artifact.source", "op": "eq", "value": "auth"}}');
  await page.locator("#cond-complex").waitFor();
  assert.equal(await rows.count(), 0, "nested conditions are edited as JSON");
  await shot(page, "rule-json");

  log("rules: without script the form still adds, removes and sends rows");
  {
    const { ctx: bare, page: p } = await signIn(tokens.admin, { javaScriptEnabled: false });
    // A click that sends the form, and the page it gets back.
    const submit = async (sel) => {
      await Promise.all([p.waitForEvent("framenavigated"), p.locator(sel).first().click()]);
      await p.waitForLoadState();
    };
    await p.goto("/rules/new");
    await submit("#cond-add");
    const r = p.locator("#cond-rows .cond-row");
    assert.equal(await r.count(), 3, "a row added by the server");
    await r.nth(2).locator("input[name=cond_field]").fill("artifact.source");
    await r.nth(2).locator("input[name=cond_value]").fill("auth");
    await r.nth(1).locator("input[name=cond_value]").fill("10");
    await p.fill("input[name=name]", "Without script");
    await submit("#preview");
    assert.equal(await p.locator("#preview-result").count(), 1, "the preview of the rows sent");
    assert.deepEqual(JSON.parse(await p.inputValue("textarea[name=conditions]")), { all: [
      { field: "observation.type", op: "eq", value: "auth" }, { field: "incident.artifact_count", op: "gte", value: 10 },
      { field: "artifact.source", op: "eq", value: "auth" }] }, "the rows as sent are the rule");
    await submit("#cond-rows .cond-row .cond-del");
    assert.equal(await r.count(), 2, "a row removed by the server");
    assert.equal(await r.nth(0).locator("input[name=cond_field]").inputValue(), "incident.artifact_count");
    await bare.close();
  }

  log("detections: a bad Sigma rule is named, a test over yesterday then over the stored lines, save, disable, enable; starter rules switch");
  await page.goto("/detections");
  assert.ok(await page.locator("#starter-rules tbody tr").count() >= 30, "the starter rules are listed");
  await page.click("#newdetection");
  const sigmaHead = "title: PAM authentication failure\nlevel: low\ntags:\n    - attack.credential-access\n" +
    "logsource:\n    product: linux\n    service: auth\ndetection:\n";
  await page.fill("textarea[name=rule]", sigmaHead + "    sel:\n        message|sounds_like: 'authentication failure'\n    condition: sel\n");
  await page.click("#test");
  assert.match(await page.textContent("#detection-error"), /detection\.sel\.message\|sounds_like/, "the error names the bad modifier");
  await page.fill("textarea[name=rule]", sigmaHead + "    keywords:\n        - 'authentication failure'\n    condition: keywords\n");
  await page.click("#test");
  await page.locator("#test-result").waitFor();
  assert.match(await page.textContent("#test-result"), /0 of 0 artifacts/, "nothing was stored yesterday (the lines keep their own 2026 dates)");
  await page.fill("input[name=from]", "2000-01-01T00:00:00Z");
  await page.fill("input[name=to]", new Date(Date.now() + 86400e3).toISOString());
  await page.click("#test");
  await page.locator("#test-result, #detection-error").first().waitFor();
  assert.equal(await page.locator("#detection-error").count(), 0, "the test is refused: " + (await page.locator("main").textContent()));
  await page.locator("#test-result tbody tr").first().waitFor();
  assert.match(await page.textContent("#test-result tbody"), /authentication failure/, "the stored PAM failures match");
  await shot(page, "detection-test");
  await Promise.all([page.waitForURL(/\/detections\?saved=/), page.click("#save")]);
  const drow = page.locator("#detections tr", { hasText: "PAM authentication failure" });
  assert.match(await drow.textContent(), /yes/, "a saved rule is enabled");
  await Promise.all([page.waitForURL(/\/detections$/), drow.locator("button").click()]);
  assert.match(await page.locator("#detections tr", { hasText: "PAM authentication failure" }).textContent(), /no/, "disabled");
  await Promise.all([page.waitForURL(/\/detections$/), page.locator("#detections tr", { hasText: "PAM authentication failure" }).locator("button").click()]);
  assert.match(await page.locator("#detections tr", { hasText: "PAM authentication failure" }).textContent(), /yes/, "enabled again");
  const starter = page.locator("#starter-rules tr", { hasText: "Shellshock" });
  await Promise.all([page.waitForURL(/\/detections#starter$/), starter.locator("button").click()]);
  assert.match(await page.locator("#starter-rules tr", { hasText: "Shellshock" }).textContent(), /no/, "a starter rule switched off for this org");
  await shot(page, "detections");

  log("observations, roles and enrichment settings");
  await page.goto("/observations");
  assert.ok(await page.locator("table.list tbody tr").count() >= 2);
  await shot(page, "observations");
  await page.goto("/roles");
  await page.fill("input[name=name]", "triage");
  await page.check("input[value='incidents:read']");
  await page.check("input[value='signals:read']");
  await Promise.all([page.waitForURL(BASE + "/roles"), page.click("form.editor button[type=submit]")]);
  assert.ok(await page.locator("table.list tr", { hasText: "triage" }).count() === 1);
  await shot(page, "roles");
  await page.goto("/settings");
  await page.fill("input[name=rate_limit]", "-5");
  await page.click("form.editor button[type=submit]");
  assert.match(await page.textContent(".alert"), /rate_limit/, "a bad setting is named");
  await shot(page, "settings");

  log("audit log: the role just created and the incident's assignee, who and what changed");
  await page.goto("/audit");
  assert.ok(await page.locator("table.audit tr", { hasText: "triage" }).count() >= 1, "the role's creation is listed");
  await page.selectOption("select[name=resource_type]", "incident");
  await Promise.all([page.waitForURL(/resource_type=incident/), page.click("form.filters button[type=submit]")]);
  const audit = await page.textContent("table.audit tbody");
  assert.match(audit, /assignee/, "the assignment is listed with its field");
  assert.match(audit, /alice/, "with its actor");
  assert.ok(!audit.includes("triage"), "the filter keeps incidents only");
  await shot(page, "audit");

  log("queue: bulk status change of two incidents");
  await page.goto("/?status=1");
  await page.locator("#rows tr input[name=id]").nth(0).check();
  await page.locator("#rows tr input[name=id]").nth(1).check();
  await page.selectOption("#bulkstatus", "2");
  await Promise.all([page.waitForURL(/changed=2/), page.click("#bulkapply")]);
  assert.match(page.lastDialog, /Move 2 incident\(s\) to Investigating/);
  assert.match(await page.textContent("p.ok"), /2 incident\(s\) moved to Investigating/);

  log("queue: a new incident appears without a reload, pushed by the event stream");
  const live = page.waitForResponse((res) => res.url().endsWith("/queue/live"));
  await page.goto("/");
  const stream = await live;
  assert.equal(stream.status(), 200, "the queue's event stream is open");
  assert.match(stream.headers()["content-type"], /text\/event-stream/);
  const r = await fetch(BASE + "/v1/observations", {
    method: "POST", headers: { Authorization: "Bearer " + tokens.admin, "Content-Type": "application/json" },
    body: JSON.stringify({ type: "network", description: "Beaconing seen by the browser test", severity: "high", nodes: [{ type: "IP", value: "198.51.100.77" }] }),
  });
  assert.equal(r.status, 201);
  await page.locator("#rows tr.fresh", { hasText: "Beaconing seen by the browser test" }).waitFor({ timeout: 20000 });

  log("errors are readable pages");
  await page.goto("/incidents/not-a-uuid");
  assert.match(await page.textContent(".msg"), /id: must be a UUID/);

  log("sign out");
  await page.click("#signout");
  await page.waitForURL(/\/signin$/);
  assert.ok(!(await ctx.cookies()).some((c) => c.name === "vigil_session"), "the cookie is cleared");
  await page.goto(incidentURL);
  assert.match(page.url(), /\/signin$/, "after sign-out the incident needs a session again");
  await ctx.close();

  log("a read-only user sees no control that would fail");
  {
    const { ctx, page } = await signIn(tokens.reader);
    assert.equal(await page.locator("#bulkapply").count(), 0, "no bulk change");
    assert.equal(await page.locator("#rows input[name=id]").count(), 0, "no selection boxes");
    await page.goto(incidentURL);
    assert.equal(await page.locator("#status-actions").count(), 0, "no status buttons");
    await shot(page, "incident-readonly");
    await page.goto("/rules");
    assert.equal(await page.locator("#newrule").count(), 0, "no new rule");
    assert.equal(await page.locator("a", { hasText: "Roles" }).count(), 0, "no roles tab");
    // A forged request is still refused by the API's own check.
    const status = await page.evaluate(async (u) => {
      const res = await fetch(u + "/status", { method: "POST", body: new URLSearchParams({ status: "1" }) });
      return res.status;
    }, incidentURL);
    assert.equal(status, 403, "the console refuses the change for lack of incidents:write");
    await ctx.close();
  }

  log("a user of another org sees nothing of this one");
  {
    const { ctx, page } = await signIn(tokens.other);
    assert.equal(await page.textContent(".counts a:first-child b"), "0", "no incident in the queue");
    await page.goto(incidentURL);
    assert.match(await page.textContent(".msg"), /not found/i);
    await page.goto("/search?query=" + encodeURIComponent(IP));
    assert.equal(await page.locator("article.art").count(), 0, "no artifact of the other org");
    await shot(page, "other-org");
    await ctx.close();
  }

  log("an expired session sends the user to sign in again");
  {
    const { ctx, page } = short;
    const exp = Number(env("SHORT_EXPIRES"));
    await new Promise((res) => setTimeout(res, Math.max(0, exp * 1000 - Date.now()) + 1500));
    await page.goto(BASE + "/search");
    assert.match(page.url(), /\/signin/, "expired: back to sign in");
    assert.ok(!(await ctx.cookies()).some((c) => c.name === "vigil_session"), "the expired session's cookie is gone");
    await ctx.close();
  }
});
