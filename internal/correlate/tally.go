package correlate

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/vigil-soc/vigil"
)

// Tally counts in memory the signals of the (detector, key) pairs that
// have not come near their thresholds, so that the store holds the state
// of those that may fire only. Most of an internet-facing host's keys are
// scanning addresses seen once or twice, which never fire: recording each
// in the store's transaction made the cost of detection one of distinct
// keys, not of lines.
//
// The counts are exact for every signal that arrives at most Lateness
// behind the newest signal of its org and detector: a key is held here
// (cold) until one of its windows could meet the detection's thresholds
// (evaluated as the store would, over every signal of the key, so the
// same window fires at the same signal), then its signals move to the
// store with the detection that crossed (the key turns hot) and the store
// decides from then on. A cold key is forgotten once its newest signal
// is more than Span + Lateness behind the newest of its org and
// detector: no signal that is not late can share a window with it. A
// late signal goes to the store, with its key's cold signals if any are
// still held; it counts with what the store holds. When more than Limit
// signals are held, keys of the org being evaluated spill to the store
// (recorded, not evaluated: no window of theirs met the thresholds).
//
// One Tally must see every signal of its store: it belongs to the store,
// and only a store that one process writes (the embedded SQLite, under
// the data directory's lock) may have one. The keys the store holds
// signals of are loaded with Hold when the store opens.
type Tally struct {
	lateness time.Duration
	limit    int

	mu    sync.Mutex
	held  int // signals in cold
	cold  coldKeys
	codec *heldCodec // the strings and nodes of cold's signals
	// codecKept is the codec's size after its last rebuild.
	codecKept int
	// pairs numbers the (org, detector) pairs of cold's keys.
	pairs     map[[2]string]uint32
	pairNames [][2]string
	hot       map[tallyKey]*hotKey
	hotDels   int // keys forgotten from hot since it was last rebuilt
	// gone are the hot keys whose transactions all committed, compactly.
	gone goneKeys
	// marks is the time of the newest signal seen per (org, detector),
	// spans the span of each detector's windows.
	marks     map[[2]string]int64
	spans     map[string]time.Duration
	lastSweep time.Time
	stats     TallyStats
	// log holds on disk the cold keys (of up to logSignalsMax signals)
	// spilled beyond the limit (nil: they spill to the store).
	log      *spillLog
	rec      []byte       // a record being logged
	unlogged []heldSignal // the signals of a record read back
}

// TallyStats counts what the Tally did with keys since it was made.
type TallyStats struct {
	Promoted, Spilled, Expired, Late int64
	// Logged counts the keys spilled to the spill log (SpillTo), Unlogged
	// those read back from it when they came again, LogLost the signals
	// an I/O error of the log lost.
	Logged, Unlogged, LogLost int64
}

// DefaultLateness is how far behind its org and detector's newest signal
// a signal may arrive and still count exactly: the clocks of an org's
// sensors and the batches in flight at once stay within it.
const DefaultLateness = 2 * time.Minute

// DefaultTallyLimit bounds the signals a Tally holds: 154 bytes of heap
// each, for keys of one signal (BenchmarkTallyHeldKeys), about 15 MB in
// all, none of it for the collector to scan. Beyond it keys of one
// signal go to the spill log at 16 bytes each and about the same CPU
// (BenchmarkDetectNewKeys): 600,000 held took 92 MB of a heap that the
// memory limit (384 MiB) bounds, and the collector ran the more often
// for it (docs/benchmarks.md, issue 34).
const DefaultTallyLimit = 100_000

// maxColdSignals promotes a key that holds this many signals within its
// horizon, whatever its windows count, so that no one key takes the
// memory of all the others.
const maxColdSignals = 20_000

// indexFrom is how many signals a key holds before it indexes them by
// artifact, so that a busy key's redelivery check stays cheap.
const indexFrom = 64

// sweepEvery is how often, at most, the Tally forgets expired keys.
const sweepEvery = 2 * time.Second

// sweepKeysPerSecond spaces the sweeps of a full Tally: one walks every
// cold key, so a Tally of n keys sweeps every n / sweepKeysPerSecond
// seconds if that is longer than sweepEvery. Walking 600,000 keys every
// 2 s took 5 % of the worst-case mix's CPU; a key then stays a few
// seconds past a horizon of minutes.
const sweepKeysPerSecond = 100_000

// sweepDue reports whether the sweep is due at now.
func (t *Tally) sweepDue(now time.Time) bool {
	every := max(sweepEvery, time.Duration(len(t.cold.one))*time.Second/sweepKeysPerSecond)
	return now.Sub(t.lastSweep) >= every
}

type tallyKey struct{ org, detector, key string }

// pair returns the number of tk's (org, detector) pair.
func (t *Tally) pair(tk tallyKey) uint32 {
	p := [2]string{tk.org, tk.detector}
	n, ok := t.pairs[p]
	if !ok {
		n = uint32(len(t.pairNames))
		t.pairs[p] = n
		t.pairNames = append(t.pairNames, p)
	}
	return n
}

// coldOf returns the ref of tk and its signals, nil when it is not cold
// (see coldKeys.get).
func (t *Tally) coldOf(tk tallyKey) (coldRef, *coldKey) {
	r, ok := t.cold.find(t.pair(tk), tk.key)
	if !ok {
		return r, nil
	}
	return r, t.cold.get(r)
}

func (t *Tally) tallyKey(r coldRef) tallyKey {
	p := t.pairNames[r.pair]
	return tallyKey{p[0], p[1], t.cold.key(r)}
}

// heldIdent tells the artifact of a held signal.
type heldIdent struct {
	id    heldID
	named bool // id is a codec string's number
}

func identOf(h heldSignal) heldIdent { return heldIdent{h.id, h.flags&heldIDString != 0} }

// hotKey is a key the store holds signals of: newest is the time of the
// newest one, pending those moved from memory that no committed
// transaction has written yet.
type hotKey struct {
	newest  int64
	pending []vigil.Signal
	// claims counts the routes of the key to the store (of a detection
	// every signal of which may fire) since it turned hot: one alone, and
	// the store holds nothing of it that counts (routed.fresh).
	claims int
}

// NewTally returns an empty Tally; lateness 0 is DefaultLateness, limit 0
// DefaultTallyLimit.
func NewTally(lateness time.Duration, limit int) *Tally {
	if lateness <= 0 {
		lateness = DefaultLateness
	}
	if limit <= 0 {
		limit = DefaultTallyLimit
	}
	return &Tally{lateness: lateness, limit: limit, cold: newColdKeys(), codec: newHeldCodec(), pairs: map[[2]string]uint32{}, hot: map[tallyKey]*hotKey{},
		gone: newGoneKeys(), marks: map[[2]string]int64{}, spans: map[string]time.Duration{}}
}

// SpillTo makes the keys of a few signals that t spills beyond its limit go
// to files in dir (removed first, and when t closes), up to logFactor
// times the limit, instead of the store: see spillLog.
func (t *Tally) SpillTo(dir string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, err := newSpillLog(dir, max(logFactor*t.limit, logMin))
	if err != nil {
		return err
	}
	t.log = l
	return nil
}

// logFactor is how many times the Tally's limit its spill log holds (at
// least logMin): 9.6 M keys by default, 16 bytes of memory each, outside
// the Go heap (and about 90 on disk). A full log sends the keys it cannot
// take to the store: at 48 (4.8 M), the edge mix at 24,000 artifacts a
// second (26,000 new keys a second, each kept its horizon of about four
// minutes) sent 8.3 M keys to the store in 30 minutes, a tenth of the
// detect stage's time once the log was full.
const (
	logFactor = 96
	logMin    = 1 << 20
)

// logSignalsMax is the most signals of a key the spill log takes as one
// record (a record of a scanner's signal is about 90 bytes, and at most
// logRecordMax): a busier key stays in memory or spills to the store.
const logSignalsMax = 8

// Close removes the files of t's spill log, if any: call it after Drain.
func (t *Tally) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.log == nil {
		return nil
	}
	err := t.log.close()
	t.log = nil
	return err
}

// LogHeld is how many keys t's spill log holds.
func (t *Tally) LogHeld() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.log == nil {
		return 0
	}
	return t.log.live
}

// Hold records that the store holds signals of (detector, key) of org,
// the newest at newest (Unix nanoseconds).
func (t *Tally) Hold(org, detector, key string, newest int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tk := tallyKey{org, detector, key}
	if h := t.hot[tk]; h != nil {
		h.newest = max(h.newest, newest)
		return
	}
	t.hot[tk] = &hotKey{newest: newest}
	m := [2]string{org, detector}
	t.marks[m] = max(t.marks[m], newest)
}

// Stats returns what the Tally did so far, and how many signals and hot
// keys it holds.
func (t *Tally) Stats() (s TallyStats, held, hot int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats, t.held, len(t.hot) + t.gone.n
}

// routed is what route hands to the store: the detections to evaluate
// there, and the hot keys whose pending signals they carry.
type routed struct {
	ds      []*vigil.Detection
	pending []tallyKey
	// spilled are the detections of ds that only record their signals: no
	// window of theirs meets the thresholds, and the store holds no other
	// signal of their keys that could share one.
	spilled map[*vigil.Detection]bool
	// fresh are the detections of ds, of detectors every signal of which
	// may fire, whose keys the Tally had not seen within Span + Lateness
	// of their org and detector's newest signal, their signals not late:
	// the store holds no signal and no burst of theirs that counts with
	// them, unless a transaction that committed first also had them
	// (Tally.alone).
	fresh map[*vigil.Detection]bool
}

// route counts what it can of org's detections ds in memory and returns
// those the store must evaluate: the keys it holds, the keys that may
// fire now (with every signal held of them), late signals, and keys
// spilled to keep within the limit.
func (t *Tally) route(org string, ds []*vigil.Detection, now time.Time) routed {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out routed
	for _, d := range ds {
		if d.Requires != "" || len(d.Signals) == 0 {
			// Every signal of such a detector may fire: the store holds
			// them all, as it always did.
			out.ds = append(out.ds, d)
			continue
		}
		if d.Met(1, 1) {
			t.routeEvery(&out, org, d)
			continue
		}
		t.spans[d.Detector] = max(t.spans[d.Detector], d.Span)
		tk := tallyKey{org, d.Detector, d.Key}
		oldest, newest := signalSpan(d.Signals)
		m := [2]string{org, d.Detector}
		mark, seen := t.marks[m]
		t.marks[m] = max(mark, newest)
		late := seen && oldest < mark-int64(t.lateness)

		ref, c := t.coldOf(tk)
		h := t.hot[tk]
		if h == nil && c == nil && t.gone.has(tk, t.marks[m], d.Span+t.lateness) {
			h = &hotKey{newest: newest}
			t.hot[tk] = h
		}
		if h == nil && c == nil && t.log != nil {
			if hs, ok := t.unlog(ref.pair, tk.key, t.marks[m]-int64(d.Span+t.lateness)); ok {
				ref, c = t.cold.intern(ref.pair, tk.key), t.cold.scratchOf(hs...)
				t.held += len(hs)
			}
		}
		if h != nil {
			h.newest = max(h.newest, newest)
			// Always as pending: once its transaction commits, the key
			// goes back to gone.
			out.add(tk, withSignals(d, slices.Concat(h.pending, d.Signals)), true)
			continue
		}
		if late {
			t.stats.Late++
			t.promote(&out, tk, ref, d, c, newest)
			continue
		}
		if c == nil {
			ref, c = t.cold.intern(ref.pair, tk.key), t.cold.fresh()
		}
		// Signals past the horizon share no window with any that is not
		// late: a busy key that never fires (a scanner of a few ports)
		// holds its last span + lateness only.
		t.held -= c.trim(t.marks[m] - int64(d.Span+t.lateness))
		fresh, lo, hi := c.add(t.codec, d.Key, d.Signals)
		t.held += fresh
		if fresh == 0 {
			t.cold.put(ref, c) // a redelivery: nothing new
			continue
		}
		if _, _, fire := burstIn(heldList{c.sigs, t.codec.names}, d.Span, d.Met, d.Order, fromNanos(lo), fromNanos(hi)); fire || len(c.sigs) >= maxColdSignals {
			t.stats.Promoted++
			t.held -= len(c.sigs)
			t.cold.del(ref)
			sigs := t.codec.decodeAll(tk.key, c.sigs)
			t.hot[tk] = &hotKey{newest: max(c.newest(), newest), pending: sigs}
			out.add(tk, withSignals(d, sigs), true)
			continue
		}
		t.cold.put(ref, c)
	}
	if t.sweepDue(now) {
		t.lastSweep = now
		t.sweep()
	}
	if t.held > t.limit {
		t.spill(&out, org, ds)
	}
	return out
}

// routeEvery routes d, of a detector every signal of which may fire, to
// the store, as hot, and marks it fresh when the Tally has not seen its
// key within Span + Lateness of its org and detector's newest signal and
// its signals are not late: any signal or burst of the key the store
// holds is then older than every window d's signals can share (its
// newest is older than the horizon of the newest of the org and
// detector, d's oldest within Lateness of it). Its key goes to gone when
// the transaction commits, as a hot key's does.
func (t *Tally) routeEvery(out *routed, org string, d *vigil.Detection) {
	t.spans[d.Detector] = max(t.spans[d.Detector], d.Span)
	tk := tallyKey{org, d.Detector, d.Key}
	oldest, newest := signalSpan(d.Signals)
	m := [2]string{org, d.Detector}
	mark, seen := t.marks[m]
	t.marks[m] = max(mark, newest)
	late := seen && oldest < mark-int64(t.lateness)
	h := t.hot[tk]
	_, c := t.coldOf(tk)
	known := h != nil || c != nil || t.gone.has(tk, t.marks[m], d.Span+t.lateness)
	if h == nil {
		h = &hotKey{newest: newest}
		t.hot[tk] = h
	}
	h.newest = max(h.newest, newest)
	h.claims++
	out.add(tk, d, true)
	if !known && !late {
		if out.fresh == nil {
			out.fresh = map[*vigil.Detection]bool{}
		}
		out.fresh[d] = true
	}
}

// alone reports whether d, routed fresh (routed.fresh) for org, is still
// the only route of its key: no transaction that committed before its
// own, nor one to come, had signals of its key. Called in d's
// transaction, which the store's one writer runs alone.
func (t *Tally) alone(org string, d *vigil.Detection) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.hot[tallyKey{org, d.Detector, d.Key}]
	return h != nil && h.claims == 1
}

// promote moves the cold signals of tk, if any, to the store with d's,
// and marks tk hot.
func (t *Tally) promote(out *routed, tk tallyKey, ref coldRef, d *vigil.Detection, c *coldKey, newest int64) {
	h := &hotKey{newest: newest}
	if c != nil {
		t.held -= len(c.sigs)
		h.newest = max(h.newest, c.newest())
		h.pending = t.codec.decodeAll(tk.key, c.sigs)
		t.cold.del(ref)
	}
	t.hot[tk] = h
	out.add(tk, withSignals(d, slices.Concat(h.pending, d.Signals)), h.pending != nil)
}

// spill moves cold keys of org to the store until a hundredth of the
// limit is free, as detections of the detectors of ds that record their
// signals and cannot fire. It moves few keys at a time: a batch that
// wrote a tenth of a large limit at once held the store's writer for
// seconds.
func (t *Tally) spill(out *routed, org string, ds []*vigil.Detection) {
	templates := map[string]*vigil.Detection{}
	for _, d := range ds {
		templates[d.Detector] = d
	}
	var buf [1]heldSignal
	for ref, e := range t.cold.one {
		if t.held <= t.limit-t.limit/100 {
			return
		}
		if t.log != nil {
			if n, ok := t.logKey(ref, e); ok {
				t.stats.Logged++
				t.held -= n
				t.cold.del(ref)
				continue
			}
		}
		p := t.pairNames[ref.pair]
		tmpl := templates[p[1]]
		if p[0] != org || tmpl == nil {
			continue
		}
		tk := t.tallyKey(ref)
		held := t.cold.signals(ref, e, &buf)
		t.stats.Spilled++
		t.held -= len(held)
		sigs := t.codec.decodeAll(tk.key, held)
		t.hot[tk] = &hotKey{newest: held[len(held)-1].at, pending: sigs}
		t.cold.del(ref)
		d := *tmpl
		d.Key, d.Signals = tk.key, sigs
		out.add(tk, &d, true)
		if out.spilled == nil {
			out.spilled = map[*vigil.Detection]bool{}
		}
		out.spilled[&d] = true
	}
}

// logKey puts the cold key ref, whose entry in cold.one is e, in the
// spill log and returns how many signals it held; false when the log
// does not take it (full, failed, or the key too busy for one record).
// A scanner that comes back within its horizon holds a few signals:
// before such keys could be logged, a full Tally sent every one of them
// to the store, a row per signal and the store's to decide from then on
// (the edge mix with the same scanners a second time ran at half the
// rate, docs/benchmarks.md, issue 34).
func (t *Tally) logKey(ref coldRef, e heldSignal) (int, bool) {
	var buf [1]heldSignal
	sigs := t.cold.signals(ref, e, &buf)
	if len(sigs) > logSignalsMax {
		return 0, false
	}
	key := t.cold.key(ref)
	t.rec = t.codec.appendRecord(t.rec[:0], key, sigs...)
	if !t.log.put(ref.pair, key, e.at, t.rec) {
		return 0, false
	}
	return len(sigs), true
}

// sweep forgets the keys whose newest signal is more than Span + Lateness
// behind the newest of their org and detector.
func (t *Tally) sweep() {
	expired := func(tk tallyKey, newest int64) bool {
		span, ok := t.spans[tk.detector]
		return ok && newest < t.marks[[2]string{tk.org, tk.detector}]-int64(span+t.lateness)
	}
	horizons := make([]int64, len(t.pairNames)) // by pair; MinInt64: none yet
	for i, p := range t.pairNames {
		horizons[i] = math.MinInt64
		if span, ok := t.spans[p[1]]; ok {
			horizons[i] = t.marks[p] - int64(span+t.lateness)
		}
	}
	for ref, e := range t.cold.one {
		// e.at is the time of the key's newest signal.
		if e.at < horizons[ref.pair] {
			t.stats.Expired++
			t.held -= t.cold.count(ref, e)
			t.cold.del(ref)
		}
	}
	if t.log != nil {
		for i, from := range horizons {
			t.stats.Expired += int64(t.log.expire(uint32(i), from))
		}
	}
	hotBefore := len(t.hot)
	for tk, h := range t.hot {
		if expired(tk, h.newest) {
			delete(t.hot, tk)
		}
	}
	t.hotDels += hotBefore - len(t.hot)
	t.cold.compact()
	if shouldCompact(t.hotDels, len(t.hot)) {
		// As coldKeys.compact: the keys of alerts, every one of which
		// may fire, are hot for their horizon and then forgotten.
		t.hot, t.hotDels = rebuilt(t.hot), 0
	}
	t.gone.expire(func(org, detector string) (time.Duration, int64, bool) {
		span, ok := t.spans[detector]
		return span + t.lateness, t.marks[[2]string{org, detector}], ok
	})
	if t.codec.size() > max(codecRebuildFrom, 2*t.held, 2*t.codecKept) {
		// Most of the codec's entries serve signals no longer held (and it
		// doubled since it was last rebuilt, so that signals whose strings
		// are all distinct do not rebuild it at every sweep).
		t.codec = t.codec.rebuild(t.cold.each)
		t.codecKept = t.codec.size()
	}
}

// codecRebuildFrom is how many entries the codec holds before the sweep
// may renumber it.
const codecRebuildFrom = 1 << 16

// committed records that the transaction of r committed: the pending
// signals it carried are in the store.
func (t *Tally) committed(r routed) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tk := range r.pending {
		h := t.hot[tk]
		if h == nil {
			continue
		}
		h.pending = nil
		if span, ok := t.spans[tk.detector]; ok {
			t.gone.add(tk, h.newest, span+t.lateness)
			delete(t.hot, tk)
			t.hotDels++
		}
	}
}

func (r *routed) add(tk tallyKey, d *vigil.Detection, pending bool) {
	r.ds = append(r.ds, d)
	if pending {
		r.pending = append(r.pending, tk)
	}
}

// add records the signals of sigs not held yet (by artifact), counting
// the lines of a unit once as countUnitsOnce does, and returns how many
// it recorded and the times of the oldest and newest of them.
func (c *coldKey) add(codec *heldCodec, key string, sigs []vigil.Signal) (fresh int, oldest, newest int64) {
	for _, s := range sigs {
		if id, ok := codec.idOf(s.ArtifactID); ok && c.holds(id) {
			continue
		}
		sg := codec.encode(key, s)
		if sg.unit != 0 && sg.flags&heldEvidence == 0 && c.counted(sg) {
			sg.flags |= heldEvidence
		}
		i, _ := slices.BinarySearchFunc(c.sigs, sg.at, func(h heldSignal, at int64) int { return cmp.Compare(h.at, at) })
		// After the signals of the same time, as the store orders them.
		for i < len(c.sigs) && c.sigs[i].at == sg.at {
			i++
		}
		c.sigs = slices.Insert(c.sigs, i, sg)
		if fresh == 0 {
			oldest, newest = sg.at, sg.at
		}
		fresh, oldest, newest = fresh+1, min(oldest, sg.at), max(newest, sg.at)
		if c.ids != nil {
			c.ids[identOf(sg)] = true
		} else if len(c.sigs) >= indexFrom {
			c.ids = make(map[heldIdent]bool, 2*len(c.sigs))
			for _, h := range c.sigs {
				c.ids[identOf(h)] = true
			}
		}
	}
	return fresh, oldest, newest
}

// heldList reads held signals for burstIn, their members by number.
type heldList struct {
	sigs  []heldSignal
	names []string
}

func (l heldList) len() int                    { return len(l.sigs) }
func (l heldList) at(i int) int64              { return l.sigs[i].at }
func (l heldList) weight(i int) int            { return l.sigs[i].weight() }
func (l heldList) member(i int) (uint32, bool) { return l.sigs[i].member, l.sigs[i].member != 0 }
func (l heldList) name(i int) string           { return l.names[l.sigs[i].member] }

// withSignals returns a copy of d with sigs as its signals.
func withSignals(d *vigil.Detection, sigs []vigil.Signal) *vigil.Detection {
	c := *d
	c.Signals = sigs
	return &c
}

// signalSpan returns the times of the oldest and newest of sigs, in Unix
// nanoseconds.
func signalSpan(sigs []vigil.Signal) (oldest, newest int64) {
	oldest, newest = nanos(sigs[0].At), nanos(sigs[0].At)
	for _, sg := range sigs[1:] {
		oldest, newest = min(oldest, nanos(sg.At)), max(newest, nanos(sg.At))
	}
	return oldest, newest
}

// Prune forgets the held signals r does not keep, as the store's
// PruneSignals forgets its own, and returns how many it forgot.
func (t *Tally) Prune(r vigil.SignalRetention) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	from := make([]int64, len(t.pairNames)) // by pair
	for i, p := range t.pairNames {
		from[i] = nanos(r.From(p[1]))
	}
	for ref := range t.cold.one {
		c := t.cold.get(ref)
		i := c.trim(from[ref.pair])
		n += i
		t.held -= i
		t.cold.put(ref, c)
	}
	if t.log != nil {
		for i, f := range from {
			n += t.log.prune(uint32(i), f)
		}
	}
	return n
}

// unlog takes the signals of key of pair out of the spill log, false when
// the log holds none at or after from.
func (t *Tally) unlog(pair uint32, key string, from int64) ([]heldSignal, bool) {
	rec, ok, err := t.log.take(pair, key, from)
	if err != nil {
		t.stats.LogLost++
	}
	if !ok {
		return nil, false
	}
	_, hs, err := t.codec.readRecord(rec, t.unlogged[:0])
	t.unlogged = hs
	if err != nil {
		t.stats.LogLost++
		return nil, false
	}
	t.stats.Unlogged++
	return hs, true
}

// Held is the signals of one key held in memory.
type Held struct {
	Org string
	Key DetectionKey
	// Signals are by time.
	Signals []vigil.Signal
}

// Drain returns every key held in memory and forgets them, marking them
// hot: a store that closes writes them, so that a restart counts them.
func (t *Tally) Drain() []Held {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Held, 0, len(t.cold.one))
	var buf [1]heldSignal
	for ref, e := range t.cold.one {
		tk, sigs := t.tallyKey(ref), t.cold.signals(ref, e, &buf)
		out = append(out, Held{Org: tk.org, Key: DetectionKey{tk.detector, tk.key}, Signals: t.codec.decodeAll(tk.key, sigs)})
		t.hot[tk] = &hotKey{newest: sigs[len(sigs)-1].at}
	}
	if t.log != nil {
		err := t.log.drain(func(pair uint32, rec []byte) {
			key, hs, err := t.codec.readRecord(rec, nil)
			if err != nil {
				t.stats.LogLost++
				return
			}
			p := t.pairNames[pair]
			tk := tallyKey{p[0], p[1], key}
			out = append(out, Held{Org: tk.org, Key: DetectionKey{tk.detector, tk.key}, Signals: t.codec.decodeAll(key, hs)})
			t.hot[tk] = &hotKey{newest: hs[len(hs)-1].at}
		})
		if err != nil {
			t.stats.LogLost++ // some records may be lost
		}
	}
	t.cold = newColdKeys()
	t.held = 0
	t.codec = newHeldCodec()
	return out
}
