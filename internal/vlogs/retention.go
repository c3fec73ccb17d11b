package vlogs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Retention per org. Each org is a tenant of its own, so its old
// artifacts are removed by a delete task of VictoriaLogs' delete API
// (/delete/run_task on the front, -delete.enable; the storage nodes run
// it, -internaldelete.enable) in that tenant only, with the filter
// _time:<cutoff: exact to the nanosecond, whatever the other orgs keep.
// A task rewrites the parts of the partitions (days) older than the
// cutoff that hold rows of the tenant, so it costs a merge of those
// parts; run hourly, each finds only the hour's newly expired rows, in
// the parts of one day. The storage nodes' own -retentionPeriod, which
// drops whole days for every tenant at no cost, is the ceiling: set it to
// the longest retention of any org (docs/operations.md).

// Retention is how long artifacts are kept: Orgs by org, Default for the
// others; zero keeps them forever.
type Retention struct {
	Default time.Duration
	Orgs    map[string]time.Duration
}

// keep returns how long org's artifacts are kept (0: forever).
func (r Retention) keep(org string) time.Duration {
	if d, ok := r.Orgs[org]; ok {
		return d
	}
	return r.Default
}

// deletePoll is how often a delete task is asked whether it ended.
const deletePoll = 200 * time.Millisecond

// ApplyRetention removes, for every org with artifacts in the cluster,
// those stamped before now less the org's retention, from VictoriaLogs
// and then their claims from PostgreSQL, and returns how many claims it
// dropped. An org that fails is left for the next run (the deletes are
// idempotent); the others go on.
func (s *Store) ApplyRetention(ctx context.Context, r Retention, now time.Time) (int, error) {
	orgs, err := s.Store.ArtifactTenantOrgs(ctx)
	if err != nil {
		return 0, err
	}
	total := 0
	var errs []error
	for _, org := range orgs {
		keep := r.keep(org)
		if keep <= 0 {
			continue
		}
		n, err := s.DropOrgArtifactsBefore(ctx, org, now.Add(-keep))
		total += n
		if err != nil {
			errs = append(errs, fmt.Errorf("org %s: %w", org, err))
		}
	}
	return total, errors.Join(errs...)
}

// DropArtifactsBefore applies one retention to every org: ApplyRetention
// with a default of now - t.
func (s *Store) DropArtifactsBefore(ctx context.Context, t time.Time) (int, error) {
	now := time.Now()
	return s.ApplyRetention(ctx, Retention{Default: now.Sub(t)}, now)
}

// DropOrgArtifactsBefore removes org's artifacts stamped before t: a
// delete task in org's tenant, awaited, then their claims, late
// enrichment and long raw lines in PostgreSQL. It returns how many claims
// it dropped.
func (s *Store) DropOrgArtifactsBefore(ctx context.Context, org string, t time.Time) (int, error) {
	tn, err := s.Tenant(ctx, org)
	if err != nil {
		return 0, err
	}
	// _time of an artifact stamped before 1970 is minTime (logsql.go):
	// such an artifact goes with any cutoff after minTime.
	cutoff, _ := entryTime(t)
	id, err := s.c.deleteTask(ctx, tn, "_time:<"+rfc(cutoff))
	if err != nil {
		return 0, err
	}
	if err := s.c.awaitDelete(ctx, id); err != nil {
		return 0, err
	}
	return s.Store.DropOrgArtifactClaimsBefore(ctx, org, t)
}

// deleteTask starts a delete task of filter in tenant t and returns its
// id.
func (c *Cluster) deleteTask(ctx context.Context, t Tenant, filter string) (string, error) {
	resp, err := c.do(ctx, "delete", http.MethodPost, c.front, "/delete/run_task", nil, &t,
		"application/x-www-form-urlencoded", strings.NewReader(url.Values{"filter": {filter}}.Encode()))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		TaskID string `json:"task_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.TaskID == "" {
		return "", errUnavailable("delete", fmt.Errorf("answer of /delete/run_task: %v", err))
	}
	return out.TaskID, nil
}

// awaitDelete returns once the delete task id is no longer active on
// any storage node.
func (c *Cluster) awaitDelete(ctx context.Context, id string) error {
	for {
		b, err := c.call(ctx, "delete", c.front, "/delete/active_tasks", nil)
		if err != nil {
			return err
		}
		var tasks []struct {
			TaskID string `json:"task_id"`
		}
		if err := json.Unmarshal(b, &tasks); err != nil {
			return errUnavailable("delete", fmt.Errorf("answer of /delete/active_tasks %.200q: %w", b, err))
		}
		active := false
		for _, tk := range tasks {
			active = active || tk.TaskID == id
		}
		if !active {
			return nil
		}
		select {
		case <-time.After(deletePoll): // the API has no wait
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
