package enrich

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-soc/vigil"
)

// lookup names one outbound look-up.
type lookup struct{ provider, key string }

// artRef is an artifact waiting for outbound look-ups, with what is needed
// to rebuild its enrichment when one returns: its nodes packed in one
// string (packNodes), not a slice of them. A full queue holds 100,000 of
// these for as long as the rate limit keeps them: as slices of the
// artifacts' node strings they were 700,000 objects of the live heap for
// the collector to mark at every cycle (on the internet-edge mix, every
// scanner's address waits for RDAP); packed, an artRef is three.
type artRef struct {
	org string
	// data is the artifact's id, then its nodes (packNodes): one string
	// of the queue's own.
	data  string
	idLen int
	since time.Time // when it was queued
}

func newArtRef(org, id string, nodes []vigil.NodeRef, since time.Time) *artRef {
	return &artRef{org: org, data: id + packNodes(nodes), idLen: len(id), since: since}
}

func (r *artRef) id() string { return r.data[:r.idLen] }

func (r *artRef) nodes() []vigil.NodeRef { return unpackNodes(r.data[r.idLen:]) }

// packNodes returns refs as one string: per node, its type's length (a
// uvarint), its type, its value's length, its value, and 1 for a key or
// 0.
func packNodes(refs []vigil.NodeRef) string {
	n := 0
	for _, r := range refs {
		n += len(r.Type) + len(r.Value) + 2*binary.MaxVarintLen64 + 1
	}
	b := make([]byte, 0, n)
	for _, r := range refs {
		b = binary.AppendUvarint(b, uint64(len(r.Type)))
		b = append(b, r.Type...)
		b = binary.AppendUvarint(b, uint64(len(r.Value)))
		b = append(b, r.Value...)
		k := byte(0)
		if r.Key {
			k = 1
		}
		b = append(b, k)
	}
	return string(b)
}

// unpackNodes returns the nodes packNodes packed into s, sharing its
// memory.
func unpackNodes(s string) []vigil.NodeRef {
	var out []vigil.NodeRef
	field := func() (string, bool) {
		n, w := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
		if w <= 0 || uint64(len(s)-w) < n {
			return "", false
		}
		f := s[w : w+int(n)]
		s = s[w+int(n):]
		return f, true
	}
	for len(s) > 0 {
		typ, ok1 := field()
		value, ok2 := field()
		if !ok1 || !ok2 || s == "" {
			return out
		}
		out = append(out, vigil.NodeRef{Type: typ, Value: value, Key: s[0] == 1})
		s = s[1:]
	}
	return out
}

// job is one queued look-up and the artifacts waiting for it. Artifacts
// naming a value already queued (or in flight) join its job: one look-up
// serves them all.
type job struct {
	lookup
	lane   *lane
	arts   []*artRef
	first  [1]*artRef // arts' first, in the job's own memory
	waited bool       // counted once as rate-limited
}

// lane holds the jobs of one (org, provider) with its rate-limit window.
// A job is first "unchecked": a worker looks for it in the store's cache
// (another process may have it, or it predates a restart), which needs no
// rate-limit token. Only if that misses does it become "ready" and wait
// for a token to be sent out.
type lane struct {
	org, provider string
	unchecked     []*job
	ready         []*job
	byKey         map[string]*job // queued, being checked or in flight
	win           window
}

func (ln *lane) queued() int { return len(ln.unchecked) + len(ln.ready) }

// What a worker is to do with a job.
type jobMode uint8

const (
	modeCached jobMode = iota // the in-process cache answers it
	modeCheck                 // read the store's cache
	modeFetch                 // send the look-up (a token was taken)
)

// ratePeriod is the period of rate_limit (look-ups per minute).
const ratePeriod = time.Minute

// defaultMaxWait bounds how long an idle worker sleeps before looking
// again, so that a clock moved by a test (Config.Now) or a rate-limit
// window that frees up is noticed.
const defaultMaxWait = time.Second

// lookupQueue is the bounded queue of outbound look-ups. Workers take
// jobs with next, round-robin over the lanes. A lane whose provider is
// disabled is emptied; one whose rate_limit is 0 still has its jobs
// checked against the store's cache but sends nothing until the limit is
// raised.
type lookupQueue struct {
	mu      sync.Mutex
	lanes   map[[2]string]*lane
	order   []*lane
	rr      int
	total   int // (look-up, artifact) pairs queued or running
	max     int
	wake    chan struct{}
	scans   atomic.Int64 // pickLocked calls: lets tests see that workers looked
	maxWait time.Duration

	// policy returns whether provider is enabled for org and its rate limit.
	policy func(org, provider string) (bool, int)
	// cached reports whether the in-process cache answers l for org now.
	cached func(org string, l lookup) bool
	now    func() time.Time
	m      *metrics
}

func newLookupQueue(max int, m *metrics, now func() time.Time) *lookupQueue {
	return &lookupQueue{
		lanes:   map[[2]string]*lane{},
		max:     max,
		wake:    make(chan struct{}),
		maxWait: defaultMaxWait,
		now:     now,
		m:       m,
	}
}

// notify wakes the waiting workers: a job was added or settings changed.
func (q *lookupQueue) notify() {
	q.mu.Lock()
	q.notifyLocked()
	q.mu.Unlock()
}

func (q *lookupQueue) notifyLocked() {
	close(q.wake)
	q.wake = make(chan struct{})
}

// add queues l for ref's artifact. It returns false, queuing nothing, when
// the queue is full.
func (q *lookupQueue) add(ref *artRef, l lookup) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.total >= q.max {
		return false
	}
	k := [2]string{ref.org, l.provider}
	ln := q.lanes[k]
	if ln == nil {
		ln = &lane{org: ref.org, provider: l.provider, byKey: map[string]*job{}}
		q.lanes[k] = ln
		q.order = append(q.order, ln)
	}
	q.total++
	q.m.queued.Set(float64(q.total))
	if j := ln.byKey[l.key]; j != nil {
		j.arts = append(j.arts, ref)
		return true
	}
	j := &job{lookup: l, lane: ln}
	j.first[0] = ref
	j.arts = j.first[:1:1] // most jobs serve one artifact: no slice of its own
	ln.unchecked = append(ln.unchecked, j)
	ln.byKey[l.key] = j
	q.notifyLocked()
	return true
}

// next blocks until a job may run or ctx ends.
func (q *lookupQueue) next(ctx context.Context) (*job, jobMode, bool) {
	for {
		q.mu.Lock()
		j, mode, wait := q.pickLocked(q.now())
		wake := q.wake
		q.mu.Unlock()
		if j != nil {
			return j, mode, true
		}
		if wait <= 0 || wait > q.maxWait {
			wait = q.maxWait
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, 0, false
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func pop(list *[]*job) *job {
	j := (*list)[0]
	(*list)[0] = nil
	*list = (*list)[1:]
	return j
}

// pickLocked returns the next runnable job and what to do with it, or how
// long until a rate-limited one may run (0: nothing timed). In a lane, a
// ready job that may be sent goes first, then a check of the store.
func (q *lookupQueue) pickLocked(now time.Time) (*job, jobMode, time.Duration) {
	q.scans.Add(1)
	var wait time.Duration
	n := len(q.order)
	prune := false
	for i := 0; i < n; i++ {
		idx := (q.rr + i) % n
		ln := q.order[idx]
		if ln.queued() == 0 {
			prune = prune || (len(ln.byKey) == 0 && ln.win.idle(now, ratePeriod))
			continue
		}
		enabled, rate := q.policy(ln.org, ln.provider)
		if !enabled {
			q.dropLocked(ln)
			continue
		}
		q.rr = (idx + 1) % n
		if len(ln.ready) > 0 {
			j := ln.ready[0]
			if q.cached(ln.org, j.lookup) {
				return pop(&ln.ready), modeCached, 0
			}
			ok, w := ln.win.take(now, rate, ratePeriod)
			if ok {
				return pop(&ln.ready), modeFetch, 0
			}
			if rate > 0 {
				if !j.waited {
					j.waited = true
					q.m.rateLimited.WithLabelValues(ln.provider).Inc()
				}
				if wait == 0 || w < wait {
					wait = w
				}
			}
		}
		if len(ln.unchecked) > 0 {
			j := pop(&ln.unchecked)
			if q.cached(ln.org, j.lookup) {
				return j, modeCached, 0
			}
			return j, modeCheck, 0
		}
	}
	if prune {
		q.pruneLocked(now)
	}
	return nil, 0, wait
}

// requeue puts a checked job that the store's cache did not answer in its
// lane's ready list, to be sent when the rate limit allows.
func (q *lookupQueue) requeue(j *job) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j.lane.ready = append(j.lane.ready, j)
	q.notifyLocked()
}

// dropLocked discards the queued jobs of a lane whose provider was
// disabled; jobs being checked or sent finish (and a checked one comes
// back to be dropped).
func (q *lookupQueue) dropLocked(ln *lane) {
	for _, list := range [][]*job{ln.unchecked, ln.ready} {
		for _, j := range list {
			delete(ln.byKey, j.key)
			q.total -= len(j.arts)
		}
	}
	ln.unchecked, ln.ready = nil, nil
	q.m.queued.Set(float64(q.total))
}

// pruneLocked forgets lanes with nothing queued or running whose window
// has nothing left to remember.
func (q *lookupQueue) pruneLocked(now time.Time) {
	keep := q.order[:0]
	for _, ln := range q.order {
		if ln.queued() == 0 && len(ln.byKey) == 0 && ln.win.idle(now, ratePeriod) {
			delete(q.lanes, [2]string{ln.org, ln.provider})
			continue
		}
		keep = append(keep, ln)
	}
	clear(q.order[len(keep):])
	q.order = keep
	q.rr = 0
}

// finish ends a job and returns the artifacts that were waiting for it,
// including those that joined while it ran.
func (q *lookupQueue) finish(j *job) []*artRef {
	q.mu.Lock()
	defer q.mu.Unlock()
	if j.lane.byKey[j.key] == j {
		delete(j.lane.byKey, j.key)
	}
	arts := j.arts
	q.total -= len(arts)
	q.m.queued.Set(float64(q.total))
	return arts
}

// orgs returns the orgs with queued jobs.
func (q *lookupQueue) orgs() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, ln := range q.order {
		if ln.queued() > 0 && !seen[ln.org] {
			seen[ln.org] = true
			out = append(out, ln.org)
		}
	}
	return out
}
