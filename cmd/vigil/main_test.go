package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runCmd runs the vigil command line in-process with an empty environment
// (plus env) and returns its stdout, stderr and error.
func runCmd(t *testing.T, env map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, func(k string) string { return env[k] }, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// Each subcommand's -h lists its own flags, not the ~40 of serve.
func TestSubcommandHelpShowsOwnFlags(t *testing.T) {
	cases := []struct {
		cmd       string
		want, not []string
	}{
		{"token", []string{"-org", "-ttl", "-data-dir", "-jwt-secret"}, []string{"-nats-url", "-workers", "-max-queue-bytes", "-database-url"}},
		{"migrate", []string{"-data-dir", "-database-url"}, []string{"-nats-url", "-workers", "-org", "-jwt-secret"}},
		{"serve", []string{"-nats-url", "-workers", "-max-queue-bytes", "-access-log"}, []string{"-org", "-ttl"}},
	}
	for _, tc := range cases {
		t.Run(tc.cmd, func(t *testing.T) {
			_, stderr, err := runCmd(t, nil, tc.cmd, "-h")
			if !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("%s -h: %v", tc.cmd, err)
			}
			if !strings.HasPrefix(stderr, "usage: vigil "+tc.cmd) {
				t.Errorf("%s -h does not start with its usage line:\n%s", tc.cmd, stderr)
			}
			lists := func(f string) bool {
				return regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(f) + `( |$)`).MatchString(stderr)
			}
			for _, f := range tc.want {
				if !lists(f) {
					t.Errorf("%s -h lacks %s:\n%s", tc.cmd, f, stderr)
				}
			}
			for _, f := range tc.not {
				if lists(f) {
					t.Errorf("%s -h lists %s, a flag of another command", tc.cmd, f)
				}
			}
		})
	}
}

// A bad flag is one line pointing at -h, not the whole flag list.
func TestBadFlagOneLine(t *testing.T) {
	cases := [][]string{
		{"serve", "--workers", "many"},
		{"serve", "--no-such-flag"},
		{"token", "--ttl", "forever", "--org", "a"},
		{"migrate", "--database-urll", "x"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, stderr, err := runCmd(t, nil, args...)
			if err == nil {
				t.Fatal("accepted")
			}
			if stderr != "" {
				t.Errorf("printed on a bad flag:\n%s", stderr)
			}
			msg := err.Error()
			if strings.Count(msg, "\n") > 0 || !strings.Contains(msg, `"vigil `+args[0]+` -h"`) {
				t.Errorf("error %q: want one line that points at vigil %s -h", msg, args[0])
			}
		})
	}
}

// Sizes are read in the units people write and the README prints.
func TestByteSizeFlag(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"512MiB", 512 << 20, true},
		{"2GiB", 2 << 30, true},
		{"1GB", 1_000_000_000, true},
		{"500 MB", 500_000_000, true},
		{"64KiB", 64 << 10, true},
		{"1048576", 1 << 20, true},
		{"0", 0, true},
		{"lots", 0, false},
		{"-1GiB", 0, false},
		{"", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			var n int64
			err := byteSize{&n}.Set(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("Set(%q) error = %v, want ok=%v", tc.in, err, tc.ok)
			}
			if tc.ok && n != tc.want {
				t.Errorf("Set(%q) = %d, want %d", tc.in, n, tc.want)
			}
		})
	}
	// Through the environment too, as the README configures it.
	var c config
	fs := newFlagSet("serve", "", &bytes.Buffer{})
	c.flags(fs)
	if err := parseFlags(fs, []string{"--memory-limit", "512MiB"}, func(k string) string {
		return map[string]string{"VIGIL_MAX_QUEUE_BYTES": "2GiB"}[k]
	}); err != nil {
		t.Fatal(err)
	}
	if c.MemoryLimit != 512<<20 || c.MaxQueueBytes != 2<<30 {
		t.Errorf("memory-limit %d, max-queue-bytes %d", c.MemoryLimit, c.MaxQueueBytes)
	}
}

// vigil token run where no server keeps its secret must refuse, not mint
// with a new secret that every server refuses.
func TestTokenRefusesFreshSecret(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vigil-data")
	stdout, _, err := runCmd(t, nil, "token", "--data-dir", dir, "--org", "acme")
	if err == nil || stdout != "" {
		t.Fatalf("token minted without a server's secret: %q, %v", stdout, err)
	}
	if !strings.Contains(err.Error(), filepath.Join(dir, "jwt-secret")) {
		t.Errorf("error does not say where the secret was looked for: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("token created %s (%v)", dir, err)
	}

	// With the server's secret it mints, and says when the token expires.
	stdout, stderr, err := runCmd(t, map[string]string{"VIGIL_JWT_SECRET": strings.Repeat("s", 32)}, "token", "--org", "acme", "--ttl", "720h")
	if err != nil || strings.Count(stdout, ".") != 2 {
		t.Fatalf("token with VIGIL_JWT_SECRET: %q, %v", stdout, err)
	}
	if !strings.Contains(stderr, "expires") || !strings.Contains(stderr, "720h") {
		t.Errorf("stderr does not tell the expiry: %q", stderr)
	}
}

func TestMigrateSaysWhatItDid(t *testing.T) {
	dir := t.TempDir()
	stdout, _, err := runCmd(t, nil, "migrate", "--data-dir", dir)
	if err != nil || !strings.Contains(stdout, "applied") || !strings.Contains(stdout, "0001_init.sql") {
		t.Fatalf("first migrate: %q, %v", stdout, err)
	}
	stdout, _, err = runCmd(t, nil, "migrate", "--data-dir", dir)
	if err != nil || !strings.Contains(stdout, "nothing to do") {
		t.Errorf("second migrate: %q, %v; want nothing to do", stdout, err)
	}
}

func TestVersion(t *testing.T) {
	stdout, _, err := runCmd(t, nil, "version")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"vigil ", "commit: ", "go: go1.", "sqlite driver: modernc.org/sqlite v"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("version output lacks %q:\n%s", want, stdout)
		}
	}
}

// --syslog-listen is repeatable on the command line; VIGIL_SYSLOG_LISTEN
// lists several URLs separated by commas; a bad URL names itself.
func TestSyslogListenFlag(t *testing.T) {
	parse := func(args []string, env map[string]string) (config, error) {
		var c config
		fs := newFlagSet("serve", "", &bytes.Buffer{})
		c.flags(fs)
		c.syslogFlag(fs)
		err := parseFlags(fs, args, func(k string) string { return env[k] })
		if err == nil {
			err = c.validate()
		}
		return c, err
	}
	c, err := parse([]string{"--syslog-listen", "udp://0.0.0.0:5514?org=acme", "--syslog-listen", "tcp://0.0.0.0:5514?org=acme"}, nil)
	if err != nil || len(c.SyslogListen) != 2 || c.SyslogListen[1].Network != "tcp" {
		t.Fatalf("two flags: %+v, %v", c.SyslogListen, err)
	}
	c, err = parse(nil, map[string]string{"VIGIL_SYSLOG_LISTEN": "udp://:514?org=a, tls://:6514?org=b&cert=c.pem&key=k.pem"})
	if err != nil || len(c.SyslogListen) != 2 || c.SyslogListen[1].Org != "b" || c.SyslogListen[1].CertFile != "c.pem" {
		t.Fatalf("from the environment: %+v, %v", c.SyslogListen, err)
	}
	if _, err := parse([]string{"--syslog-listen", "tcp://:601"}, nil); err == nil || !strings.Contains(err.Error(), "tcp://:601") {
		t.Errorf("a URL without org: %v", err)
	}
	if _, err := parse([]string{"--syslog-listen", "tcp://:601?org=a", "--syslog-listen", "tcp://:601?org=b"}, nil); err == nil || !strings.Contains(err.Error(), "name=") {
		t.Errorf("two listeners of one name: %v", err)
	}
}

// migrate --address-keys writes PostgreSQL's keys; on SQLite it is refused
// naming the flag (Open writes them there), before anything is opened.
func TestMigrateAddressKeysNeedsPostgres(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runCmd(t, nil, "migrate", "--data-dir", dir, "--address-keys")
	if err == nil || !strings.Contains(err.Error(), "--address-keys") {
		t.Fatalf("migrate --address-keys on SQLite: %v, want an error naming the flag", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the data dir was written: %v", entries)
	}
}
