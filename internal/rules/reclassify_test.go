package rules

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

// fakeMarks keeps re-classification marks in memory, as the stores do
// (their behaviour is storetest's; this is the Reclassifier's).
type fakeMarks struct {
	mu        sync.Mutex
	marks     map[string]*fakeMark
	incidents map[string][]string
	seq       int
}

type fakeMark struct {
	gen    int64
	cursor string
	queued int
	until  time.Time
}

func (f *fakeMarks) mark(org string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	if m, ok := f.marks[org]; ok {
		m.gen++
		m.cursor = ""
		return
	}
	f.marks[org] = &fakeMark{gen: 1, queued: f.seq}
}

func (f *fakeMarks) ClaimReclassify(_ context.Context, now, until time.Time) (*vigil.Reclassification, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var orgs []string
	for org, m := range f.marks {
		if m.until.IsZero() || !m.until.After(now) {
			orgs = append(orgs, org)
		}
	}
	if len(orgs) == 0 {
		return nil, nil
	}
	sort.Slice(orgs, func(i, j int) bool { return f.marks[orgs[i]].queued < f.marks[orgs[j]].queued })
	m := f.marks[orgs[0]]
	m.until = until
	return &vigil.Reclassification{OrgID: orgs[0], Generation: m.gen, Cursor: m.cursor, Until: until}, nil
}

func (f *fakeMarks) ReleaseReclassify(_ context.Context, c vigil.Reclassification, cursor string, done bool, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.marks[c.OrgID]
	if !ok || !m.until.Equal(c.Until) {
		return nil
	}
	if done && m.gen == c.Generation {
		delete(f.marks, c.OrgID)
		return nil
	}
	if m.gen == c.Generation {
		m.cursor = cursor
	}
	f.seq++
	m.queued, m.until = f.seq, time.Time{}
	return nil
}

func (f *fakeMarks) OpenIncidentIDs(_ context.Context, org string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.incidents[org]), nil
}

// calls records what was classified, as "org:id,id".
type calls struct {
	got  []string
	fail error
}

func (c *calls) Incidents(_ context.Context, org string, ids []string) error {
	if c.fail != nil {
		return c.fail
	}
	c.got = append(c.got, org+":"+strings.Join(ids, ","))
	return nil
}

func newTestReclassifier(f *fakeMarks, c *calls) *Reclassifier {
	r := NewReclassifier(nil, nil)
	r.store, r.classify, r.Batch = f, c, 2
	return r
}

// steps runs Step until it finds nothing, and returns how many worked.
func steps(t *testing.T, r *Reclassifier) int {
	t.Helper()
	n := 0
	for ; ; n++ {
		worked, err := r.Step(context.Background())
		if err != nil {
			t.Fatalf("Step: %v", err)
		}
		if !worked {
			return n
		}
		if n > 100 {
			t.Fatal("Step never runs out")
		}
	}
}

// TestReclassifierSteps: each step classifies at most Batch incidents of
// one org, in the order of their ids, then the org waits its turn behind
// the others; several writes make one pass.
func TestReclassifierSteps(t *testing.T) {
	f := &fakeMarks{marks: map[string]*fakeMark{}, incidents: map[string][]string{
		"big":   {"i5", "i1", "i4", "i2", "i3"},
		"small": {"j1"},
	}}
	f.mark("big")
	f.mark("big")
	f.mark("small")
	f.mark("big")
	c := &calls{}
	r := newTestReclassifier(f, c)
	if n := steps(t, r); n != 4 {
		t.Errorf("%d steps, want 4", n)
	}
	want := []string{"big:i1,i2", "small:j1", "big:i3,i4", "big:i5"}
	if !slices.Equal(c.got, want) {
		t.Fatalf("classified %v, want %v", c.got, want)
	}
	if len(f.marks) != 0 {
		t.Fatalf("marks left: %v", f.marks)
	}
}

// TestReclassifierWriteDuringPass: a rule write during a pass starts it
// over, so that no incident keeps a classification by the old rules.
func TestReclassifierWriteDuringPass(t *testing.T) {
	f := &fakeMarks{marks: map[string]*fakeMark{}, incidents: map[string][]string{"org": {"a", "b", "c"}}}
	f.mark("org")
	c := &calls{}
	r := newTestReclassifier(f, c)
	if worked, err := r.Step(context.Background()); !worked || err != nil {
		t.Fatalf("Step: %v %v", worked, err)
	}
	f.mark("org")
	steps(t, r)
	want := []string{"org:a,b", "org:a,b", "org:c"}
	if !slices.Equal(c.got, want) {
		t.Fatalf("classified %v, want %v", c.got, want)
	}
}

// TestReclassifierFailure: a step that fails keeps the mark where it
// was, for a later step; nothing is lost.
func TestReclassifierFailure(t *testing.T) {
	f := &fakeMarks{marks: map[string]*fakeMark{}, incidents: map[string][]string{"org": {"a", "b", "c"}}}
	f.mark("org")
	c := &calls{fail: errors.New("database is busy")}
	r := newTestReclassifier(f, c)
	if worked, err := r.Step(context.Background()); !worked || err == nil {
		t.Fatalf("Step: %v %v, want the failure", worked, err)
	}
	if m := f.marks["org"]; m == nil || m.cursor != "" || !m.until.IsZero() {
		t.Fatalf("mark after a failed step: %+v", m)
	}
	c.fail = nil
	steps(t, r)
	if want := []string{"org:a,b", "org:c"}; !slices.Equal(c.got, want) {
		t.Fatalf("classified %v, want %v", c.got, want)
	}
}

// TestReclassifierRun: Run works a mark off when Notify says there is
// one, and finds one made elsewhere (another process) at its next poll.
func TestReclassifierRun(t *testing.T) {
	for _, notify := range []bool{true, false} {
		t.Run(fmt.Sprint("notify=", notify), func(t *testing.T) {
			f := &fakeMarks{marks: map[string]*fakeMark{}, incidents: map[string][]string{"org": {"a"}}}
			classified := make(chan string, 1)
			r := newTestReclassifier(f, nil)
			r.classify = notifying(classified)
			r.Poll = time.Hour
			if !notify {
				r.Poll = 10 * time.Millisecond
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); r.Run(ctx) }()
			f.mark("org")
			if notify {
				r.Notify()
			}
			if got := <-classified; got != "org:a" {
				t.Errorf("classified %s, want org:a", got)
			}
			cancel()
			<-done
		})
	}
}

// notifying sends what it classifies on a channel.
type notifying chan string

func (n notifying) Incidents(_ context.Context, org string, ids []string) error {
	n <- org + ":" + strings.Join(ids, ",")
	return nil
}
