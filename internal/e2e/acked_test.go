package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/vigil-soc/vigil/internal/client"
	"github.com/vigil-soc/vigil/internal/postgres/pgtest"
)

// TestAcknowledgedIsStored: an item the API acknowledges is stored, as it
// was sent or with the reply saying what was altered; nothing a store
// refuses is acknowledged and then fails in the workers (retried, then
// dead-lettered: lost). Each body is posted as written, not re-encoded:
// NUL characters in raw lines, in the fields parsed from them (a user
// name, an alert signature, a DNS name: they become node values,
// descriptions and keys) and in metadata; invalid UTF-8 and unpaired
// surrogates in raw and metadata.
func TestAcknowledgedIsStored(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) { acknowledgedIsStored(t) })
	t.Run("PostgreSQL", func(t *testing.T) {
		pgtest.Require(t)
		acknowledgedIsStored(t, "--database-url", pgtest.FreshDB(t))
	})
}

func acknowledgedIsStored(t *testing.T, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	p := startVigil(t, "vigil", dir, append(args, "--max-deliver", "2", "--ack-wait", "2s")...)
	tok := mintToken(t, dir, org, "signals:write", "signals:read", "incidents:read")
	c := newClient(p, tok)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("warnings and errors of vigil:\n%s", grepLines(p.logs.tail(1<<20), `"level":"warn`, `"level":"error`))
		}
	})

	alert := func(sig string) string {
		return `{\"timestamp\":\"2026-11-25T10:00:00.000000+0000\",\"event_type\":\"alert\",\"src_ip\":\"203.0.113.9\",\"src_port\":4444,` +
			`\"dest_ip\":\"10.0.0.5\",\"dest_port\":80,\"proto\":\"TCP\",\"alert\":{\"action\":\"allowed\",\"gid\":1,\"signature_id\":2000001,` +
			`\"rev\":1,\"signature\":\"` + sig + `\",\"category\":\"A Network Trojan was detected\",\"severity\":1}}`
	}
	type item struct {
		body string // the item as posted
		raw  string // the raw line it must be stored with
		warn string // the field the reply must say was altered
	}
	items := map[string]item{
		"NUL in raw":            {`{"source":"generic","raw":"key=va\u0000lue"}`, "key=va\x00lue", ""},
		"invalid UTF-8 in raw":  {"{\"source\":\"generic\",\"raw\":\"caf\xe9 \xff\"}", "caf\uFFFD \uFFFD", "raw"},
		"lone surrogate in raw": {`{"source":"generic","raw":"x \ud800 y"}`, "x \uFFFD y", "raw"},
		"NUL in a signature": {`{"source":"suricata","raw":"` + alert(`ET TROJAN a\\u0000b`) + `"}`,
			strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(alert(`ET TROJAN a\\u0000b`)), ""},
		"NUL in a DNS name": {`{"source":"dns","raw":"{\"ts\":1764064800.0,\"uid\":\"C1\",\"id.orig_h\":\"10.0.0.5\",\"id.orig_p\":5353,\"id.resp_h\":\"10.0.0.53\",\"id.resp_p\":53,\"proto\":\"udp\",\"query\":\"ev\\u0000il.example\",\"qtype_name\":\"A\"}"}`,
			`{"ts":1764064800.0,"uid":"C1","id.orig_h":"10.0.0.5","id.orig_p":5353,"id.resp_h":"10.0.0.53","id.resp_p":53,"proto":"udp","query":"ev\u0000il.example","qtype_name":"A"}`, ""},
		"NUL in metadata":        {`{"source":"generic","raw":"m1","metadata":{"k":"v\u0000w"}}`, "m1", ""},
		"NUL in a metadata key":  {`{"source":"generic","raw":"m2","metadata":{"k\u0000":"v"}}`, "m2", ""},
		"invalid UTF-8 metadata": {"{\"source\":\"generic\",\"raw\":\"m3\",\"metadata\":{\"k\":\"caf\xe9\"}}", "m3", "metadata"},
		"surrogate in metadata":  {`{"source":"generic","raw":"m4","metadata":{"k":"\ud800"}}`, "m4", ""},
	}
	for i := 0; i < 6; i++ {
		line := fmt.Sprintf("Nov 25 10:00:0%d web-1 sshd[42]: Failed password for ro\\u0000ot from 203.0.113.9 port 22 ssh2", i)
		items[fmt.Sprintf("NUL in a user name %d", i)] = item{`{"source":"auth","raw":"` + line + `"}`, strings.ReplaceAll(line, `\u0000`, "\x00"), ""}
	}
	// An org id no store could keep is refused at authentication: before,
	// PostgreSQL answered 202 to a NUL in it and the batch then failed in
	// the workers on every try.
	secret, err := os.ReadFile(filepath.Join(dir, "jwt-secret"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"org\x00-e2e", "   ", strings.Repeat("o", 10<<10)} {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"org_id": bad, "sub": "e2e",
			"exp": time.Now().Add(time.Hour).Unix(), "permissions": []string{"signals:write"}}).SignedString(bytes.TrimSpace(secret))
		if err != nil {
			t.Fatal(err)
		}
		r, err := client.New(p.base, tok, nil).PostArtifacts(ctx, []client.NewArtifact{{Source: "generic", Raw: "x"}})
		if err != nil || r.Status != 401 {
			t.Errorf("org_id %.20q: status %d (%v), want 401: %s", bad, r.Status, err, r.Body)
		}
	}

	acked := map[string]string{} // id → case
	for name, it := range items {
		r, err := c.PostArtifactsJSON(ctx, []byte(`{"artifacts":[`+it.body+`]}`))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.Status != 202 {
			t.Errorf("%s: status %d, want 202 (stored as sent, or said what was altered): %s", name, r.Status, r.Body)
			continue
		}
		acked[r.IDs[0]] = name
		var warned []string
		for _, w := range r.Warnings {
			warned = append(warned, w.Field)
		}
		if want := []string{it.warn}; it.warn == "" && len(warned) > 0 || it.warn != "" && !slices.Equal(warned, want) {
			t.Errorf("%s: warnings %+v, want %q", name, r.Warnings, it.warn)
		}
	}
	stored := pollUntil(t, 60*time.Second, "every acknowledged artifact stored", func() (map[string]string, bool) {
		page, err := c.Artifacts(ctx, client.ArtifactQuery{Limit: 1000})
		if err != nil {
			return nil, false
		}
		got := map[string]string{}
		for _, a := range page.Artifacts {
			if acked[a.ID] != "" {
				got[a.ID] = a.Raw
			}
		}
		return got, len(got) == len(acked)
	})
	for id, raw := range stored {
		if want := items[acked[id]].raw; raw != want {
			t.Errorf("%s: stored raw %q, want %q", acked[id], raw, want)
		}
	}
	// The brute force of the NUL user name is detected: the detection and
	// correlation stages took the batches too.
	pollUntil(t, 30*time.Second, "an incident", func() (int, bool) {
		page, err := c.Incidents(ctx, 50, 0)
		if err != nil {
			return 0, false
		}
		return page.Total, page.Total > 0
	})
	for _, m := range []string{"vigil_pipeline_failures_total", "vigil_dead_letters_total"} {
		if v, err := metric(ctx, p, m); err != nil || v != 0 {
			t.Errorf("%s = %v (%v), want 0", m, v, err)
		}
	}
}

// grepLines returns the lines of s that hold any of subs, ignoring case.
func grepLines(s string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if strings.Contains(strings.ToLower(l), sub) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
