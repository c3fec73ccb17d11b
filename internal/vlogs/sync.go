package vlogs

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"sync"
	"time"
)

// Making writes durable. A storage node answers an insert once the rows
// are in its memory; it writes them to disk every
// -inmemoryDataFlushInterval (5 s by default), so a node killed before
// that loses them. Before InsertArtifacts returns (and a worker
// acknowledges the queued batch), the node that took the rows is told to
// put them on disk: /internal/force_flush turns its buffered rows into
// in-memory parts, and a snapshot of the partitions (days) written
// (/internal/partition/snapshot/create) writes every in-memory part of
// those partitions to files and syncs them, after which the snapshot,
// only hard links, is deleted. Both are what the node does on its own
// every few seconds; here they run when a write needs them, for every
// write waiting on that node at once (group commit): writes arriving
// while a round runs wait for the next round, which starts as soon as the
// running one ends.

// syncTimeout bounds one round.
const syncTimeout = 30 * time.Second

type syncer struct {
	c *Cluster
	n *node

	mu      sync.Mutex
	waiting []*syncReq
	running bool
}

type syncReq struct {
	days map[string]bool
	done chan error
}

func newSyncer(c *Cluster, n *node) *syncer { return &syncer{c: c, n: n} }

// sync returns once every row written to the node before the call, in
// partitions days, is on disk.
func (s *syncer) sync(ctx context.Context, days map[string]bool) error {
	r := &syncReq{days: days, done: make(chan error, 1)}
	s.mu.Lock()
	s.waiting = append(s.waiting, r)
	if !s.running {
		s.running = true
		go s.loop()
	}
	s.mu.Unlock()
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *syncer) loop() {
	for {
		s.mu.Lock()
		round := s.waiting
		s.waiting = nil
		if len(round) == 0 {
			s.running = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		days := map[string]bool{}
		for _, r := range round {
			for d := range r.days {
				days[d] = true
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
		err := s.c.flushToDisk(ctx, s.n, days)
		cancel()
		for _, r := range round {
			r.done <- err
		}
	}
}

// flushToDisk writes the rows node n holds of partitions days to disk.
func (c *Cluster) flushToDisk(ctx context.Context, n *node, days map[string]bool) error {
	if _, err := c.call(ctx, "force_flush", n.url, "/internal/force_flush", nil); err != nil {
		return err
	}
	names := make([]string, 0, len(days))
	for d := range days {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		b, err := c.call(ctx, "snapshot", n.url, "/internal/partition/snapshot/create", url.Values{"partition_prefix": {d}})
		if err != nil {
			return err
		}
		var paths []string
		if err := json.Unmarshal(b, &paths); err != nil {
			return errUnavailable("snapshot", fmt.Errorf("answer %.200q: %w", b, err))
		}
		for _, p := range paths {
			if _, err := c.call(ctx, "snapshot", n.url, "/internal/partition/snapshot/delete", url.Values{"path": {p}}); err != nil {
				return err
			}
		}
	}
	return nil
}

// partitionOf returns the name of the VictoriaLogs partition (a day) of
// a _time in nanoseconds, as the storage computes it.
func partitionOf(ns int64) string {
	const day = int64(24 * time.Hour)
	return time.Unix(0, ns/day*day).UTC().Format("20060102")
}
