// Time of each console page and of each API call the console makes,
// measured over loopback against a running `vigil serve` (the times
// include the loopback round trip, so they bound the server's):
//
//   node internal/console/browser/latency.mjs http://127.0.0.1:8080 "$TOKEN" [requests] [incidents]
//
// It first tops the org up to [incidents] incidents (default 10000) with
// API observations, one new address each, then requests every page and
// call [requests] times (default 100) in sequence and prints p50, p99
// and max in milliseconds, as a Markdown table.
const [base, token, reqArg, incArg] = process.argv.slice(2);
if (!base || !token) { console.error("usage: latency.mjs BASE_URL TOKEN [requests] [incidents]"); process.exit(2); }
const N = Number(reqArg || 100), wantIncidents = Number(incArg || 10000);
const auth = { Authorization: "Bearer " + token };

async function api(method, path, body) {
  const r = await fetch(base + path, { method, headers: { ...auth, "Content-Type": "application/json" }, body: body && JSON.stringify(body) });
  const j = await r.json();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${j.message}`);
  return j.data;
}

// Top up the incidents: observations on fresh addresses of 198.18.0.0/15
// (the benchmarking range), 16 at a time.
const have = (await api("GET", "/v1/incidents?limit=1")).total;
let next = have;
async function worker() {
  while (next < wantIncidents) {
    const i = next++;
    await api("POST", "/v1/observations", {
      type: "network", severity: ["low", "medium", "high", "critical"][i % 4],
      description: `latency fixture ${i}`, nodes: [{ type: "IP", value: `198.${18 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}` }],
    });
  }
}
await Promise.all(Array.from({ length: 16 }, worker));
const incidents = (await api("GET", "/v1/incidents?limit=1")).total;
const artifacts = (await api("GET", "/v1/artifacts?limit=1&query=sshd")).total; // a count of one term's matches

// The largest incident, its first observation and newest artifact, and an
// address to search.
const big = (await api("GET", "/v1/incidents?limit=1000&q=brute")).incidents.sort((a, b) => b.artifact_count - a.artifact_count)[0]
  || (await api("GET", "/v1/incidents?limit=1")).incidents[0];
const inc = await api("GET", "/v1/incidents/" + big.id);
const obs = await api("GET", "/v1/observations/" + inc.observations[0].id);
const art = obs.artifact_ids[obs.artifact_ids.length - 1];
const ip = (inc.nodes.find((n) => n.type === "IP") || { value: "203.0.113.7" }).value;

// A console session, as a browser gets one.
const signin = await fetch(base + "/signin", { method: "POST", redirect: "manual", body: new URLSearchParams({ token }) });
const cookie = (signin.headers.get("set-cookie") || "").split(";")[0];
if (!cookie.startsWith("vigil_session=")) throw new Error("sign-in failed: " + signin.status);

async function time(label, path, init) {
  const ms = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    const r = await fetch(base + path, { redirect: "manual", ...init });
    await r.arrayBuffer();
    ms.push(performance.now() - t);
    if (r.status >= 400) throw new Error(`${label}: ${r.status}`);
  }
  ms.sort((a, b) => a - b);
  const q = (p) => ms[Math.min(ms.length - 1, Math.ceil(p * ms.length) - 1)].toFixed(1);
  console.log(`| ${label} | \`${path.length > 60 ? path.slice(0, 57) + "…" : path}\` | ${q(0.5)} | ${q(0.99)} | ${ms[ms.length - 1].toFixed(1)} |`);
}
const page = { headers: { Cookie: cookie } };
const call = { headers: auth };
const post = (body) => ({ method: "POST", headers: { ...auth, "Content-Type": "application/json" }, body: JSON.stringify(body) });

console.log(`store: ${incidents} incidents, ${artifacts} artifacts matching "sshd"; ${N} sequential requests each\n`);
console.log("| page or call | request | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|");
await time("page: queue", "/", page);
await time("page: queue, severity sort", "/?sort=severity", page);
await time("page: queue, title search", "/?q=" + encodeURIComponent(ip), page);
await time("page: queue rows (poll)", "/queue/rows?sort=last_activity", { headers: { Cookie: cookie, "X-Console-Fragment": "rows" } });
await time(`page: incident (${inc.artifact_count} artifacts)`, "/incidents/" + big.id, page);
await time("page: search, an address", "/search?query=" + encodeURIComponent(ip), page);
await time("page: search, two words", "/search?query=" + encodeURIComponent("failed password"), page);
await time("page: observations", "/observations", page);
await time("page: rules", "/rules", page);
await time("page: settings", "/settings", page);
await time("page: detections", "/detections", page);
await time("page: audit log", "/audit", page);
const ipNode = inc.nodes.find((n) => n.type === "IP");
if (ipNode) await time("page: incidents of a node", "/?node=" + ipNode.id, page);
await time("API: the caller", "/v1/me", call);
await time("API: queue page", "/v1/incidents?sort=last_activity&limit=50", call);
await time("API: queue count", "/v1/incidents?status=1&limit=1", call);
await time("API: title search", "/v1/incidents?q=" + encodeURIComponent(ip) + "&limit=50&sort=last_activity", call);
await time("API: incident", "/v1/incidents/" + big.id, call);
await time("API: observation", "/v1/observations/" + obs.id, call);
await time("API: artifact", "/v1/artifacts/" + art, call);
await time("API: search, an address", "/v1/artifacts?limit=25&query=" + encodeURIComponent(ip), call);
await time("API: observations", "/v1/observations?limit=50", call);
await time("API: incident history", "/v1/incidents/" + big.id + "/history?limit=200", call);
await time("API: comments", "/v1/incidents/" + big.id + "/comments?limit=100", call);
await time("API: detection rules", "/v1/detection-rules", call);
await time("API: audit log", "/v1/audit?limit=50", call);
await time("API: rule preview", "/v1/classification-rules/preview", post({ conditions: { field: "incident.artifact_count", op: "gte", value: 20 } }));
