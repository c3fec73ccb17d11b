// Package vlogs keeps artifacts in a VictoriaLogs cluster: Store is the
// PostgreSQL store with its artifact methods sent to VictoriaLogs over
// HTTP, while incidents, observations, rules, case work, audit and the
// artifacts' ids stay in PostgreSQL (docs/architecture.md, "Artifacts in
// VictoriaLogs").
//
// Each org is a tenant of its own (AccountID, ProjectID), assigned in
// PostgreSQL; every request names it in headers, never in a query.
//
// Nothing acknowledged is lost and nothing shows twice. InsertArtifacts
// first claims the ids in PostgreSQL for one write with a lease (each new
// id's row names the write, artifact_ids.writer; the write's one row in
// artifact_writes holds the lease): ids already stored are skipped, ids
// held by a live write are left to it (EUNAVAILABLE, so the queue retries
// the batch), ids whose write's lease expired (its writer died) are
// looked up in VictoriaLogs and written only if absent. It writes the
// rest to one storage node, makes them durable there (sync.go) and only
// then ends the write (one row, whatever the batch's size) and returns,
// so that a worker acknowledges a batch only once its artifacts are on
// disk. A crash at any step leaves a write whose lease expires; the
// redelivered batch, or any later one naming the same ids, takes them
// over and finds what was written.
package vlogs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/search"
)

// Store is a vigil.Store whose artifacts live in a VictoriaLogs cluster
// and everything else in PostgreSQL.
type Store struct {
	*postgres.Store
	c *Cluster

	// Lease is how long a claim is held by a writer that does not finish;
	// longer than writeTimeout, within which a write (its insert and
	// sync) ends or fails.
	Lease time.Duration

	// tenants caches each org's tenant, which never changes once
	// assigned.
	tenants sync.Map // org → Tenant

	// keysFrom caches ArtifactAddressKeysFrom as a time (zero: every
	// entry has its address keys) once read.
	keysFrom atomic.Pointer[time.Time]

	// sampleSize is about how many entries the sample of a total
	// reads (estimate.go): sampleSize, less in tests.
	sampleSize int

	// dies, when set (tests), is asked after each write reached
	// VictoriaLogs: true makes InsertArtifacts end there as a process
	// killed at that point would, its claims left to expire.
	dies func() bool
}

// writeTimeout bounds the VictoriaLogs part of one InsertArtifacts.
const writeTimeout = time.Minute

// errDied is what InsertArtifacts returns when dies says so.
var errDied = errors.New("vlogs: writer died (test)")

var _ vigil.Store = (*Store)(nil)
var _ vigil.ArtifactEstimator = (*Store)(nil)

// New returns the store over pg and c.
func New(pg *postgres.Store, c *Cluster) *Store {
	return &Store{Store: pg, c: c, Lease: 2 * writeTimeout, sampleSize: sampleSize}
}

// Cluster returns the VictoriaLogs cluster (its health for /readyz).
func (s *Store) Cluster() *Cluster { return s.c }

// Tenant returns org's VictoriaLogs tenant, assigned on first use.
func (s *Store) Tenant(ctx context.Context, org string) (Tenant, error) {
	if t, ok := s.tenants.Load(org); ok {
		return t.(Tenant), nil
	}
	a, p, err := s.Store.ArtifactTenant(ctx, org)
	if err != nil {
		return Tenant{}, err
	}
	t := Tenant{a, p}
	s.tenants.Store(org, t)
	return t, nil
}

// addressKeysFrom returns the time from which every entry holds its
// address keys; zero when all do.
func (s *Store) addressKeysFrom(ctx context.Context) (time.Time, error) {
	if t := s.keysFrom.Load(); t != nil {
		return *t, nil
	}
	ns, err := s.Store.ArtifactAddressKeysFrom(ctx)
	if err != nil {
		return time.Time{}, err
	}
	var t time.Time
	if ns > 0 {
		// Entries stamped before 1970 were written at minTime.
		t = time.Unix(0, max(ns, minTime.UnixNano()+1))
	}
	s.keysFrom.Store(&t)
	return t, nil
}

// InsertArtifacts stores arts of org once per id, durably (see the
// package comment). The first of an id repeated within arts wins.
func (s *Store) InsertArtifacts(ctx context.Context, org string, arts []*vigil.Artifact) error {
	if len(arts) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(arts))
	byID := make(map[string]*vigil.Artifact, len(arts))
	ids, tss := make([]string, 0, len(arts)), make([]int64, 0, len(arts))
	for _, a := range arts {
		if seen[a.ID] {
			continue
		}
		seen[a.ID] = true
		byID[a.ID] = a
		ids, tss = append(ids, a.ID), append(tss, a.Timestamp.UnixNano())
	}
	t, err := s.Tenant(ctx, org)
	if err != nil {
		return err
	}
	claim, err := s.Store.ClaimArtifacts(ctx, org, ids, tss, s.Lease)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	write := claim.Fresh
	if len(claim.Doubt) > 0 {
		absent, err := s.absent(ctx, t, claim.Doubt, byID)
		if err != nil {
			return err
		}
		write = append(write, absent...)
	}
	if err := s.write(ctx, org, t, write, byID); err != nil {
		// VictoriaLogs may hold part of the write: whoever retries it
		// must look first, now rather than when the lease would end.
		ectx, ecancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer ecancel()
		return errors.Join(err, s.Store.ExpireArtifacts(ectx, claim.Token))
	}
	if s.dies != nil && s.dies() {
		return errDied
	}
	if err := s.Store.ReleaseArtifacts(ctx, claim.Token); err != nil {
		return err
	}
	if claim.Busy > 0 {
		return &vigil.Error{Code: vigil.EUNAVAILABLE, Message: "artifact store busy: another writer holds some of these artifacts",
			Op: "InsertArtifacts", Err: fmt.Errorf("%d artifacts claimed by a live writer", claim.Busy)}
	}
	return nil
}

// write sends the artifacts ids of byID to one storage node and returns
// once they are on its disk.
func (s *Store) write(ctx context.Context, org string, t Tenant, ids []string, byID map[string]*vigil.Artifact) error {
	if len(ids) == 0 {
		return nil
	}
	body := make([]byte, 0, len(ids)*600)
	var long []*vigil.Artifact
	days := map[string]bool{}
	lastDay := int64(math.MinInt64)
	for _, id := range ids {
		a := byID[id]
		var inPG bool
		body, inPG = entry(body, a)
		body = append(body, '\n')
		if inPG {
			long = append(long, a)
		}
		tm, _ := entryTime(a.Timestamp)
		if d := tm.UnixNano() / int64(24*time.Hour); d != lastDay {
			lastDay = d
			days[partitionOf(tm.UnixNano())] = true
		}
	}
	if len(long) > 0 {
		if err := s.Store.PutArtifactRaws(ctx, org, long); err != nil {
			return err
		}
	}
	// A node that refused the rows before taking any (down, or read-only
	// for want of disk) leaves them to the next; any other failure may
	// have left rows on the node, which the retry must look for.
	first := s.c.pick()
	var err error
	for i := range s.c.storage {
		n := s.c.storage[(first+i)%len(s.c.storage)]
		if err = s.c.insert(ctx, n, t, body); err == nil {
			return n.sync.sync(ctx, days)
		}
		if !errors.Is(err, errNotTaken) {
			return err
		}
	}
	return err
}

// absent returns those of ids (claims taken over from a writer that died)
// that VictoriaLogs does not hold. Every node first makes what it took
// searchable, so that rows the dead writer sent are seen; a node that
// cannot answer fails the call (the batch is retried later) rather than
// let a row it holds be written twice.
func (s *Store) absent(ctx context.Context, t Tenant, ids []string, byID map[string]*vigil.Artifact) ([]string, error) {
	for _, n := range s.c.storage {
		if _, err := s.c.call(ctx, "force_flush", n.url, "/internal/force_flush", nil); err != nil {
			return nil, err
		}
	}
	have := map[string]bool{}
	for start := 0; start < len(ids); start += idChunk {
		chunk := ids[start:min(start+idChunk, len(ids))]
		lo, hi := byID[chunk[0]].Timestamp, byID[chunk[0]].Timestamp
		for _, id := range chunk {
			ts := byID[id].Timestamp
			if ts.Before(lo) {
				lo = ts
			}
			if ts.After(hi) {
				hi = ts
			}
		}
		tf, _ := timeFilter(vigil.TimeRange{Start: lo, End: hi.Add(1)})
		err := s.c.query(ctx, t, tf+" "+idsFilter(chunk)+" | fields id, "+idField, func(row map[string]string) error {
			id, err := idOf(row)
			have[id] = true
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	var out []string
	for _, id := range ids {
		if !have[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// idChunk bounds the ids of one query, within the front's
// -search.maxQueryLen (16 KiB by default) with each id written twice
// (idsFilter: 32 letters and 36 characters, quoted).
const idChunk = 180

// SearchArtifacts returns a page of org's artifacts matching f, newest
// first, and the exact total.
func (s *Store) SearchArtifacts(ctx context.Context, org string, f vigil.ArtifactFilter) ([]*vigil.Artifact, int, error) {
	arts, total, _, err := s.SearchArtifactsEstimated(ctx, org, f, 0)
	return arts, total, err
}

// SearchArtifactsEstimated is SearchArtifacts with the total of a query
// counted exactly up to exactUpTo matches only: beyond, it may be
// estimated above it (estimate.go: from a sample across the range, once
// the sample shows beyond doubt that there are more, or the count,
// newest first, has found exactUpTo+1). exactUpTo ≤ 0 counts every total
// exactly.
func (s *Store) SearchArtifactsEstimated(ctx context.Context, org string, f vigil.ArtifactFilter, exactUpTo int) ([]*vigil.Artifact, int, bool, error) {
	q, err := search.Parse(f.Query)
	if err != nil {
		return nil, 0, false, err
	}
	tf, ok := timeFilter(f.Range)
	if !ok {
		return []*vigil.Artifact{}, 0, false, nil
	}
	filter := tf
	if f.Source != "" {
		filter += " " + sourceFilter(f.Source)
	}
	base := filter // without the query's words
	keysFrom, err := s.addressKeysFrom(ctx)
	if err != nil {
		return nil, 0, false, err
	}
	qf := queryFilter(q, keysFrom)
	if qf != "" {
		filter += " " + qf
	}
	if filter == "" || len(q.Any) == 0 && tf == "" && f.Source == "" {
		// Only exclusions (or nothing): match every entry first.
		filter = "* " + filter
	}
	t, err := s.Tenant(ctx, org)
	if err != nil {
		return nil, 0, false, err
	}
	total, estimated, counted := 0, false, false
	if exactUpTo > 0 && len(q.Any) > 0 {
		if total, estimated, counted, err = s.boundedTotal(ctx, t, base, qf, filter, f.Range, exactUpTo, time.Now()); err != nil {
			return nil, 0, false, wrap("SearchArtifacts", err)
		}
	}
	if !counted {
		err = s.c.query(ctx, t, filter+" | stats count() n", func(row map[string]string) error {
			_, err := fmt.Sscan(row["n"], &total)
			return err
		})
		if err != nil {
			return nil, 0, false, wrap("SearchArtifacts", err)
		}
	}
	out := []*vigil.Artifact{}
	if total == 0 || f.Page.Offset >= total {
		return out, total, estimated, nil
	}
	out, err = s.page(ctx, org, t, filter, total, f.Page, f.Preview)
	if err != nil {
		return nil, 0, false, wrap("SearchArtifacts", err)
	}
	return out, total, estimated, nil
}

// read runs a query for entries and returns them as artifacts, with the
// raw lines kept in PostgreSQL and the enrichment recorded since.
func (s *Store) read(ctx context.Context, org string, t Tenant, query string, previews bool) ([]*vigil.Artifact, error) {
	out := []*vigil.Artifact{}
	var inPG []string
	if previews {
		query += previewPipes
	} else {
		query += deletePipe
	}
	err := s.c.query(ctx, t, query, func(row map[string]string) error {
		a, rawPG, err := artifactOf(org, row, previews)
		if err != nil {
			return err
		}
		if rawPG {
			inPG = append(inPG, a.ID)
		}
		out = append(out, a)
		return nil
	})
	if err != nil || len(out) == 0 {
		return out, err
	}
	ids := make([]string, len(out))
	for i, a := range out {
		ids[i] = a.ID
	}
	var raws map[string]string
	var sizes map[string]int
	if len(inPG) > 0 {
		limit := 0
		if previews {
			limit = vigil.PreviewRawBytes
		}
		if raws, sizes, err = s.Store.ArtifactRaws(ctx, org, inPG, limit); err != nil {
			return nil, err
		}
	}
	enr, err := s.Store.ArtifactEnrichments(ctx, org, ids)
	if err != nil {
		return nil, err
	}
	for _, a := range out {
		if r, ok := raws[a.ID]; ok {
			a.Raw = r
			if previews && sizes[a.ID] > vigil.PreviewRawBytes {
				a.Raw, a.RawTruncated, a.RawBytes = vigil.TrimPartialRune(r), true, sizes[a.ID]
			}
		}
		if e, ok := enr[a.ID]; ok {
			a.Enrichment = e
		}
	}
	return out, nil
}

// GetArtifacts returns the artifacts of org named by ids, in the order of
// ids, each once. PostgreSQL's claims give each one's time, which bounds
// the query to the partitions that hold them.
func (s *Store) GetArtifacts(ctx context.Context, org string, ids []string) ([]*vigil.Artifact, error) {
	ids = vigil.Dedupe(ids)
	if len(ids) == 0 {
		return []*vigil.Artifact{}, nil
	}
	byID, err := s.fetch(ctx, org, ids, false)
	if err != nil {
		return nil, err
	}
	return vigil.InIDOrder(ids, byID), nil
}

// fetch reads the artifacts of org named by ids, by id.
func (s *Store) fetch(ctx context.Context, org string, ids []string, preview bool) (map[string]*vigil.Artifact, error) {
	times, err := s.Store.ArtifactTimes(ctx, org, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*vigil.Artifact, len(times))
	if len(times) == 0 {
		return byID, nil
	}
	t, err := s.Tenant(ctx, org)
	if err != nil {
		return nil, err
	}
	known := make([]string, 0, len(times))
	for _, id := range ids {
		if _, ok := times[id]; ok {
			known = append(known, id)
		}
	}
	for start := 0; start < len(known); start += idChunk {
		chunk := known[start:min(start+idChunk, len(known))]
		lo, hi := times[chunk[0]], times[chunk[0]]
		for _, id := range chunk {
			lo, hi = min(lo, times[id]), max(hi, times[id])
		}
		tf, _ := timeFilter(vigil.TimeRange{Start: time.Unix(0, lo), End: time.Unix(0, hi+1)})
		arts, err := s.read(ctx, org, t, tf+" "+idsFilter(chunk), preview)
		if err != nil {
			return nil, wrap("GetArtifacts", err)
		}
		for _, a := range arts {
			if _, dup := byID[a.ID]; !dup {
				byID[a.ID] = a
			}
		}
	}
	return byID, nil
}

// SetArtifactEnrichment records enrichment found after the artifact was
// stored in PostgreSQL (VictoriaLogs entries do not change); reads
// return it in place of the entry's own.
func (s *Store) SetArtifactEnrichment(ctx context.Context, org, id string, enrichment json.RawMessage) error {
	return s.Store.PutArtifactEnrichment(ctx, org, id, enrichment)
}

// IncidentArtifacts returns a page of previews of the incident's
// artifacts still stored, newest first: the page is chosen in
// PostgreSQL, the artifacts read from VictoriaLogs.
func (s *Store) IncidentArtifacts(ctx context.Context, org, id string, p vigil.Page) ([]*vigil.Artifact, int, error) {
	ids, _, total, err := s.Store.IncidentArtifactRefs(ctx, org, id, p)
	if err != nil {
		return nil, 0, err
	}
	if len(ids) == 0 {
		return []*vigil.Artifact{}, total, nil
	}
	byID, err := s.fetch(ctx, org, ids, true)
	if err != nil {
		return nil, 0, err
	}
	return vigil.InIDOrder(ids, byID), total, nil
}

// IncidentFacts returns what classification rules see of an incident,
// its newest artifacts read from VictoriaLogs.
func (s *Store) IncidentFacts(ctx context.Context, org, id string) (*vigil.IncidentFacts, error) {
	f, err := s.Store.IncidentFacts(ctx, org, id)
	if err != nil {
		return nil, err
	}
	ids, _, _, err := s.Store.IncidentArtifactRefs(ctx, org, id, vigil.Page{Limit: vigil.MaxFactArtifacts})
	if err != nil || len(ids) == 0 {
		return f, err
	}
	byID, err := s.fetch(ctx, org, ids, false)
	if err != nil {
		return nil, err
	}
	f.Artifacts = nil
	for _, a := range vigil.InIDOrder(ids, byID) {
		f.Artifacts = append(f.Artifacts, vigil.ArtifactFacts{Source: a.Source, Raw: a.Raw, Timestamp: a.Timestamp, Event: a.Event})
	}
	return f, nil
}

// wrap names the operation of a VictoriaLogs error.
func wrap(op string, err error) error {
	var ve *vigil.Error
	if err == nil || errors.As(err, &ve) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	return &vigil.Error{Code: vigil.EINTERNAL, Op: op, Err: err}
}
