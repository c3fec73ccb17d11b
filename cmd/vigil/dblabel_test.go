package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestDatabaseLabelHidesCredentials(t *testing.T) {
	tests := []struct {
		url, want string
	}{
		{"postgres://vigil:s3cret@pg-1:5432/vigil_a?sslmode=verify-full&password=x", "postgres://pg-1:5432/vigil_a"},
		{"postgresql://pg-1,pg-2/vigil", "postgresql://pg-1,pg-2/vigil"},
		{"host=pg-1 port=5432 user=vigil password=s3cret dbname=vigil_a", "postgres host=pg-1 port=5432 dbname=vigil_a"},
		{"postgres://vigil:s3cret?x@pg-1/vigil_a", "postgres://pg-1/vigil_a"},
		{"postgres://vigil:123/s3cret@pg-1/vigil_a", "postgres://pg-1/vigil_a"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := databaseLabel(&config{DatabaseURL: tt.url})
			if got != tt.want {
				t.Errorf("databaseLabel(%q) = %q, want %q", tt.url, got, tt.want)
			}
			if strings.Contains(got, "s3cret") || strings.Contains(got, "vigil:") {
				t.Errorf("label %q shows credentials", got)
			}
		})
	}
	if got := databaseLabel(&config{DataDir: "/srv/vigil"}); !strings.HasPrefix(got, "sqlite /srv/vigil/vigil.db") {
		t.Errorf("SQLite label %q, want it to name /srv/vigil/vigil.db", got)
	}
}

func TestQueueNameValidated(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"serve", "--queue-name", "soc.b"}, nil},
		{[]string{"worker", "--queue-name", strings.Repeat("x", 33)}, nil},
		{[]string{"serve"}, map[string]string{"VIGIL_QUEUE_NAME": "soc b"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			dir := t.TempDir()
			err := run(context.Background(), append(tc.args, "--data-dir", dir), func(k string) string { return tc.env[k] }, &stderr, &stderr)
			if err == nil || !strings.Contains(err.Error(), "--queue-name") || !strings.Contains(err.Error(), "letters, digits, '-' or '_'") {
				t.Fatalf("error %v, want one naming --queue-name and what it may hold", err)
			}
		})
	}
}
