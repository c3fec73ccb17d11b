package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// step is one shell block of the README walk-through and the reply the
// README shows after it, if any.
type step struct {
	script string
	reply  string // the ```json block that follows, "" if none
}

var fence = regexp.MustCompile("(?s)```(sh|json)\n(.*?)```")

// walkthrough returns the steps of the README section whose heading
// starts with heading.
func walkthrough(t *testing.T, heading string) []step {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\n## "+heading)
	if start < 0 {
		t.Fatalf("README has no section %q", heading)
	}
	text = text[start+1:]
	if end := strings.Index(text[3:], "\n## "); end >= 0 {
		text = text[:end+3]
	}
	var steps []step
	for _, m := range fence.FindAllStringSubmatch(text, -1) {
		switch {
		case m[1] == "sh":
			steps = append(steps, step{script: m[2]})
		case len(steps) > 0 && steps[len(steps)-1].reply == "":
			steps[len(steps)-1].reply = m[2]
		default:
			t.Fatalf("README: a json block that follows no command:\n%s", m[2])
		}
	}
	return steps
}

// The README walk-through is run as written, against a real server, in a
// directory where `./vigil-data` is that server's data dir; each reply the
// README shows must have the shape (success, message, fields) of the one
// the server gives.
func TestREADMEWalkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README walk-through needs %s: %v (.ci/run installs it)", tool, err)
		}
	}
	steps := walkthrough(t, "A walk-through")
	if len(steps) < 5 {
		t.Fatalf("README walk-through has %d shell steps", len(steps))
	}
	work := t.TempDir()
	p := startVigil(t, "readme", filepath.Join(work, "vigil-data"))
	runWalkthrough(t, steps, work, strings.NewReplacer("localhost:8080", strings.TrimPrefix(p.base, "http://")))
}

// TestREADMEShipper runs the README's rsyslog section as written, with a
// real rsyslogd forwarding the auth dataset (in place of
// /var/log/auth.log) to a syslog listener, until the detectors opened an
// incident; the reply shown must have the server's shape.
func TestREADMEShipper(t *testing.T) {
	rsyslogd := requireTool(t, "rsyslogd", "/usr/sbin/rsyslogd")
	steps := walkthrough(t, "Ship a server's auth log")
	if len(steps) != 2 {
		t.Fatalf("README rsyslog section has %d shell steps, want 2", len(steps))
	}
	work := t.TempDir()
	p := startVigil(t, "readme", filepath.Join(work, "vigil-data"), "--syslog-listen", "tcp://127.0.0.1:0?org=acme&name=tcp")
	authFile, _ := datasetFile(t, t.TempDir(), "auth")
	t.Cleanup(func() {
		// rsyslogd forked into the background: end it, and wait until it
		// is gone (it writes its state into work as it stops).
		b, err := os.ReadFile(filepath.Join(work, "rsyslogd.pid"))
		if err != nil {
			return
		}
		pid := strings.TrimSpace(string(b))
		exec.Command("kill", pid).Run()
		for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat("/proc/" + pid); err != nil {
				return
			}
		}
		t.Errorf("rsyslogd (pid %s) still running 10 s after SIGTERM", pid)
	})
	runWalkthrough(t, steps, work, strings.NewReplacer("localhost:8080", strings.TrimPrefix(p.base, "http://"),
		`port="6601"`, `port="`+syslogPorts(t, p)["tcp"]+`"`, "/var/log/auth.log", authFile, "/usr/sbin/rsyslogd", rsyslogd))
}

// runWalkthrough runs the steps as one bash script in work (with
// go run ./cmd/vigil as the built binary, and repl's replacements), within
// three minutes, and checks each reply the README shows against the
// step's output.
func runWalkthrough(t *testing.T, steps []step, work string, repl *strings.Replacer) {
	t.Helper()
	const marker = "@@@ end of step @@@"
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for _, s := range steps {
		body := repl.Replace(strings.ReplaceAll(s.script, "go run ./cmd/vigil", vigilBin))
		fmt.Fprintf(&script, "%s\necho\necho '%s'\n", body, marker)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = work
	cmd.Env = childEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("walk-through failed: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	outputs := strings.Split(string(out), marker+"\n")
	if len(outputs) < len(steps) {
		t.Fatalf("%d outputs for %d steps:\n%s", len(outputs), len(steps), out)
	}
	for i, s := range steps {
		if s.reply == "" {
			continue
		}
		want, err := jsonDocs(s.reply)
		if err != nil {
			t.Fatalf("README step %d: its reply is not JSON: %v", i+1, err)
		}
		got, err := jsonDocs(outputs[i])
		if err != nil {
			t.Fatalf("step %d printed no JSON: %v\n%s", i+1, err, outputs[i])
		}
		if len(got) != len(want) {
			t.Errorf("step %d printed %d replies, the README shows %d:\n%s", i+1, len(got), len(want), outputs[i])
			continue
		}
		for j := range want {
			if diff := sameShape("", want[j], got[j]); diff != "" {
				t.Errorf("step %d (%.60q…), reply %d differs from the README: %s\ngot: %s", i+1, s.script, j+1, diff, outputs[i])
			}
		}
	}
}

// jsonDocs decodes every JSON value of s, in order.
func jsonDocs(s string) ([]any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	var docs []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, v)
	}
	if len(docs) == 0 {
		return nil, errors.New("no JSON value")
	}
	return docs, nil
}

// sameShape compares a documented reply with a real one: the same keys
// of every object, "success" and "message" equal, the same kind of value
// everywhere (ids, times and counts may differ). It describes the first
// difference, or returns "".
func sameShape(path string, want, got any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want an object, got %T", path, got)
		}
		if len(w) == 0 {
			return "" // {} in the README stands for any object (an enrichment, say)
		}
		var wk, gk []string
		for k := range w {
			wk = append(wk, k)
		}
		for k := range g {
			gk = append(gk, k)
		}
		slices.Sort(wk)
		slices.Sort(gk)
		if !slices.Equal(wk, gk) {
			return fmt.Sprintf("%s: keys %v, the README shows %v", path, gk, wk)
		}
		for _, k := range wk {
			if (k == "success" || k == "message") && path == "" && w[k] != g[k] {
				return fmt.Sprintf("%s: %v, the README shows %v", k, g[k], w[k])
			}
			if d := sameShape(path+"."+k, w[k], g[k]); d != "" {
				return d
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s: want an array, got %T", path, got)
		}
		if (len(w) == 0) != (len(g) == 0) {
			return fmt.Sprintf("%s: %d items, the README shows %d", path, len(g), len(w))
		}
		if len(w) > 0 {
			return sameShape(path+"[0]", w[0], g[0])
		}
	case nil:
		// null in the README: the real value may be null or set (a
		// classification, an enrichment that arrived).
	default:
		if got == nil || fmt.Sprintf("%T", want) != fmt.Sprintf("%T", got) {
			return fmt.Sprintf("%s: %T %v, the README shows %T %v", path, got, got, want, want)
		}
	}
	return ""
}
