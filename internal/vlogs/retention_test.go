package vlogs

import (
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/vlogs/vltest"
)

// TestRetentionPerOrg: each org's retention removes its own artifacts
// older than it from the cluster and from PostgreSQL, to the second,
// and no other org's: one org kept 10 days, one by the default of 40,
// one forever.
func TestRetentionPerOrg(t *testing.T) {
	c := vltest.Start(t, 2)
	s := openOn(t, c)
	now := time.Now().Truncate(time.Second)
	short, long, forever := vigil.NewID(), vigil.NewID(), vigil.NewID()
	// 60 artifacts a day apart, the newest now - 30 minutes: 0 to 59 days
	// old; i days old is arts[59-i].
	arts := map[string][]*vigil.Artifact{}
	for _, org := range []string{short, long, forever} {
		for i := range 60 {
			arts[org] = append(arts[org], batch(1, now.Add(-30*time.Minute-time.Duration(59-i)*24*time.Hour))[0])
		}
		if err := s.InsertArtifacts(t.Context(), org, arts[org]); err != nil {
			t.Fatal(err)
		}
	}
	r := Retention{Default: 40 * 24 * time.Hour, Orgs: map[string]time.Duration{short: 10 * 24 * time.Hour, forever: 0}}
	n, err := s.ApplyRetention(t.Context(), r, now)
	if err != nil {
		t.Fatalf("retention: %v", err)
	}
	// short keeps 0..9 days old (10), long 0..39 (40), forever all 60.
	if want := (60 - 10) + (60 - 40); n != want {
		t.Errorf("retention dropped %d claims, want %d", n, want)
	}
	for _, tc := range []struct {
		org  string
		want int
	}{{short, 10}, {long, 40}, {forever, 60}} {
		if total, distinct := countAll(t, s, tc.org, 60); total != tc.want || distinct != tc.want {
			t.Errorf("org kept %d (%d distinct), want %d", total, distinct, tc.want)
		}
		got, err := s.GetArtifacts(t.Context(), tc.org, ids(arts[tc.org]))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.want || got[0].ID != arts[tc.org][60-tc.want].ID {
			t.Errorf("by id: %d artifacts, want the newest %d", len(got), tc.want)
		}
	}
	// Run again: nothing more goes.
	if n, err := s.ApplyRetention(t.Context(), r, now); err != nil || n != 0 {
		t.Errorf("second run: %d, %v; want 0", n, err)
	}
	if total, _ := countAll(t, s, short, 60); total != 10 {
		t.Errorf("after a second run the short org holds %d, want 10", total)
	}
}

func ids(arts []*vigil.Artifact) []string {
	out := make([]string, len(arts))
	for i, a := range arts {
		out[i] = a.ID
	}
	return out
}
