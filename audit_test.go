package vigil_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil"
)

func TestAuditDiff(t *testing.T) {
	big := strings.Repeat("x", vigil.MaxAuditFieldBytes)
	for _, tc := range []struct {
		name          string
		before, after any
		wantB, wantA  string // "" for nil
	}{
		{"creation", nil, map[string]any{"name": "a", "n": 1}, "", `{"n":1,"name":"a"}`},
		{"deletion", map[string]any{"name": "a"}, nil, `{"name":"a"}`, ""},
		{"only the changed fields", map[string]any{"name": "a", "n": 1, "tags": []string{"x"}},
			map[string]any{"name": "b", "n": 1, "tags": []string{"x"}}, `{"name":"a"}`, `{"name":"b"}`},
		{"a field that appears", map[string]any{"a": 1}, map[string]any{"a": 1, "b": 2}, `{}`, `{"b":2}`},
		{"nothing changed", map[string]any{"a": 1}, map[string]any{"a": 1}, "", ""},
		{"updated_at is the entry's own time", map[string]any{"a": 1, "updated_at": "t1"}, map[string]any{"a": 1, "updated_at": "t2"}, "", ""},
		{"secrets by name, at any depth", nil, map[string]any{"secret": "s1", "api_token": "s2", "key": "s3", "hash": "s4",
			"signing_key": "s5", "nested": map[string]any{"password": "s6", "list": []any{map[string]any{"credentials": "s7"}}}},
			"", `{"api_token":"****","hash":"****","key":"****","nested":{"list":[{"credentials":"****"}],"password":"****"},"secret":"****","signing_key":"****"}`},
		{"a changed secret shows as changed, never its value", map[string]any{"secret": "old"}, map[string]any{"secret": "new"},
			`{"secret":"****"}`, `{"secret":"****"}`},
		{"flags named key are kept", nil, map[string]any{"nodes": []any{map[string]any{"key": true, "value": "10.0.0.1"}}},
			"", `{"nodes":[{"key":true,"value":"10.0.0.1"}]}`},
		{"URLs without credentials", nil, map[string]any{"url": "https://u:p@h.example/x?token=t", "feed_url": "https://h.example/f?k=v"},
			"", `{"feed_url":"https://h.example/f?k=****","url":"https://****@h.example/x?token=****"}`},
		{"large values omitted", nil, map[string]any{"rule": big, "name": "r"}, "",
			`{"name":"r","rule":{"omitted_bytes":` + itoa(len(big)+2) + `}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, a, err := vigil.AuditDiff(tc.before, tc.after)
			if err != nil {
				t.Fatal(err)
			}
			for _, side := range []struct {
				name      string
				got       json.RawMessage
				want      string
				wantsNone bool
			}{{"before", b, tc.wantB, tc.wantB == ""}, {"after", a, tc.wantA, tc.wantA == ""}} {
				if side.wantsNone {
					if side.got != nil {
						t.Errorf("%s = %s, want none", side.name, side.got)
					}
					continue
				}
				if string(side.got) != side.want {
					t.Errorf("%s = %s, want %s", side.name, side.got, side.want)
				}
			}
		})
	}
	if _, _, err := vigil.AuditDiff(nil, []string{"not an object"}); err == nil {
		t.Error("a value that is not a JSON object was taken")
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
