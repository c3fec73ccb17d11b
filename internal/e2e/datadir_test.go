package e2e_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/client"
)

// Two servers on one data dir do not fail loudly on their own: the second
// takes the embedded queue's files over while the first goes on answering
// 202 for batches nobody will store. The second must refuse to start,
// naming the holder; a SIGKILLed holder must not leave the dir locked.
func TestSecondServerOnOneDataDirRefused(t *testing.T) {
	dir := t.TempDir()
	first := startVigil(t, "first", dir)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	second := exec.CommandContext(ctx, vigilBin, "serve", "--addr", "127.0.0.1:0", "--data-dir", dir)
	second.Env = childEnv()
	out, err := second.CombinedOutput()
	if err == nil {
		t.Fatalf("a second vigil serve on %s started and exited 0; output:\n%s", dir, out)
	}
	want := fmt.Sprintf("PID %d", first.cmd.Process.Pid)
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "another vigil process") {
		t.Errorf("second process output does not name the holder (%s):\n%s", want, out)
	}
	if strings.Contains(string(out), "listening") {
		t.Errorf("second process listened before refusing:\n%s", out)
	}

	// The first still stores what it acknowledges.
	tok := mintToken(t, dir, "org-lock", "signals:write", "signals:read")
	c := newClient(first, tok)
	acked := map[string]string{}
	arts := []client.NewArtifact{{Source: "custom", Raw: "after the refused second server 1"}, {Source: "custom", Raw: "after the refused second server 2"}}
	r, err := c.PostArtifacts(ctx, arts)
	if err != nil || r.Status != 202 || len(r.IDs) != 2 {
		t.Fatalf("POST to the first server: %v %+v", err, r)
	}
	for i, id := range r.IDs {
		acked[id] = arts[i].Raw
	}
	awaitStored(t, ctx, first, c, acked)

	// SIGKILL: the kernel drops the lock; a restart on the dir works and
	// finds what the first acknowledged.
	first.kill(t)
	again := startVigil(t, "after-kill", dir)
	c = newClient(again, tok)
	requireExactlyOnce(t, awaitStored(t, ctx, again, c, acked), acked)
}
