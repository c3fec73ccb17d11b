package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/correlate"
)

// A batch of Sigma matches on Windows events grows some hundred
// observations already open, each once: per growth its artifacts'
// insert, its update (description, severity, rank, artifact count) and
// its burst's extension, three statements each and a third of a batch's
// correlation statements. The transaction keeps them (pendingGrowths)
// and writes them all in three statements (settle) before anything reads
// what they change: every corrTx method but those that read or write
// only the detection signals, the nodes, the key nodes' incidents, the
// incidents' history and entity risk calls settle first, and Bursts does
// when it reads a burst with a write pending. The rows written are those
// that writing each growth at once wrote, in the same order.

// pendingGrowths are the growths and burst extensions a correlation
// transaction has not written yet.
type pendingGrowths struct {
	// growths are in rounds: an observation's first growth pending is in
	// the first, its second in the second… (a detector splits a key's
	// signals of one batch into bursts apart in time: each grows its
	// observation), so that each round writes an observation once.
	growths [][]correlate.Growth
	exts    []burstExt
	// grown are the observations with a growth pending, obs those with
	// a growth or an extension pending, keys the detection keys with an
	// extension pending.
	grown    map[string]int // how many growths it has pending
	obs      map[string]bool
	keys     map[correlate.DetectionKey]bool
	extended map[burstRef]int // the index of its extension
}

// burstRef names a burst.
type burstRef struct {
	k             correlate.DetectionKey
	observationID string
}

// burstExt is an ExtendBurst not written yet.
type burstExt struct {
	burstRef
	last    int64
	signals int
}

func (p *pendingGrowths) empty() bool { return len(p.growths) == 0 && len(p.exts) == 0 }

// queueGrowth keeps g (no roll-up's) for settle.
func (t *corrTx) queueGrowth(g correlate.Growth) {
	p := &t.pending
	if p.obs == nil {
		p.grown, p.obs = map[string]int{}, map[string]bool{}
	}
	r := p.grown[g.ObservationID]
	if r == len(p.growths) {
		p.growths = append(p.growths, nil)
	}
	p.growths[r] = append(p.growths[r], g)
	p.grown[g.ObservationID], p.obs[g.ObservationID] = r+1, true
}

func (t *corrTx) ExtendBurst(ctx context.Context, k correlate.DetectionKey, observationID string, last int64, signals int) error {
	p := &t.pending
	ref := burstRef{k, observationID}
	if i, ok := p.extended[ref]; ok {
		// What it sets replaces what was pending.
		p.exts[i].last, p.exts[i].signals = last, signals
		return nil
	}
	if p.obs == nil {
		p.grown, p.obs = map[string]int{}, map[string]bool{}
	}
	if p.keys == nil {
		p.keys, p.extended = map[correlate.DetectionKey]bool{}, map[burstRef]int{}
	}
	p.obs[observationID], p.keys[k], p.extended[ref] = true, true, len(p.exts)
	p.exts = append(p.exts, burstExt{ref, last, signals})
	return nil
}

// overlay returns bursts, read from the store, as the pending growths
// and extensions leave them, without those whose last signal is before
// since.
func (p *pendingGrowths) overlay(bursts []correlate.Burst, since int64) []correlate.Burst {
	out := bursts[:0]
	for _, b := range bursts {
		if i, ok := p.extended[burstRef{b.DetectionKey, b.ObservationID}]; ok {
			b.Last, b.Signals = p.exts[i].last, p.exts[i].signals
		}
		if r := p.grown[b.ObservationID]; r > 0 {
			// Its newest growth's, in the last round it is in.
			for _, g := range p.growths[r-1] {
				if g.ObservationID == b.ObservationID {
					b.Severity = g.Severity
				}
			}
		}
		if b.Last >= since {
			out = append(out, b)
		}
	}
	return out
}

// settle writes the pending growths and extensions: each round of
// growths' artifacts in one statement and their observations in a
// second, then the bursts in one.
func (t *corrTx) settle(ctx context.Context) error {
	p := &t.pending
	if p.empty() {
		return nil
	}
	rounds, exts := p.growths, p.exts
	*p = pendingGrowths{}
	for _, growths := range rounds {
		if len(growths) == 1 {
			// One alone (a roll-up's growth settles the one before it):
			// the statements of one growth, cheaper than a list's.
			if err := t.writeGrowth(ctx, growths[0]); err != nil {
				return err
			}
			continue
		}
		added, err := t.settleArtifacts(ctx, growths)
		if err != nil {
			return err
		}
		rows := make([][6]any, len(growths))
		for i, g := range growths {
			rows[i] = [6]any{g.ObservationID, g.Description, g.Severity, g.TitleRank, nanos(g.Now), added[g.ObservationID]}
		}
		list, err := json.Marshal(rows)
		if err != nil {
			return fmt.Errorf("observation growths: %w", err)
		}
		if _, err := t.tx.ExecContext(ctx, settleObservationsSQL, string(list), t.org); err != nil {
			return err
		}
	}
	if len(exts) == 1 {
		e := exts[0]
		_, err := t.tx.ExecContext(ctx, `UPDATE detect_bursts SET last_at = ?, signals = ?
			WHERE org_id = ? AND detector = ? AND key = ? AND observation_id = ?`,
			e.last, e.signals, t.org, e.k.Detector, e.k.Key, e.observationID)
		return err
	}
	if len(exts) > 0 {
		rows := make([][6]any, len(exts))
		for i, e := range exts {
			rows[i] = [6]any{e.k.Detector, e.k.Key, e.observationID, e.last, e.signals, t.org}
		}
		list, err := json.Marshal(rows)
		if err != nil {
			return fmt.Errorf("burst extensions: %w", err)
		}
		if _, err := t.tx.ExecContext(ctx, settleBurstsSQL, string(list)); err != nil {
			return err
		}
	}
	return nil
}

const (
	// settleArtifactsSQL appends the artifacts of each growth ?1 ([id,
	// [artifact…]]) to its observation of org ?2 after those it has, up
	// to ?3 in all; SQLite computes the rows before inserting any (the
	// SELECT reads the table written), so each observation's count is
	// the one it had before the statement.
	settleArtifactsSQL = `INSERT INTO observation_artifacts (observation_id, artifact_id, pos)
		SELECT o.id, a.value, COALESCE(o.artifact_count, (SELECT COUNT(*) FROM observation_artifacts x WHERE x.observation_id = o.id)) + a.key
		FROM json_each(?1) g CROSS JOIN observations o ON o.id = g.value ->> '$[0]' AND +o.org_id = ?2
		CROSS JOIN json_each(g.value, '$[1]') a
		WHERE COALESCE(o.artifact_count, (SELECT COUNT(*) FROM observation_artifacts x WHERE x.observation_id = o.id)) + a.key < ?3
		ORDER BY g.key, a.key ON CONFLICT DO NOTHING RETURNING observation_id`
	// settleObservationsSQL writes each growth ?1 ([id, description,
	// severity, rank, updated, artifacts added]) to its observation of
	// org ?2.
	settleObservationsSQL = `UPDATE observations SET description = j.value ->> '$[1]', severity = j.value ->> '$[2]',
		title_rank = j.value ->> '$[3]', updated_at = j.value ->> '$[4]',
		artifact_count = COALESCE(artifact_count + (j.value ->> '$[5]'),
			(SELECT COUNT(*) FROM observation_artifacts x WHERE x.observation_id = observations.id))
		FROM json_each(?1) j WHERE observations.id = j.value ->> '$[0]' AND +observations.org_id = ?2`
	// settleBurstsSQL writes each extension ?1 ([detector, key,
	// observation, last, signals, org]) to its burst.
	//
	// The org is in every row, so that every term of the primary key
	// comes from ?1: with ?2 alone SQLite walked the org's bursts.
	settleBurstsSQL = `UPDATE detect_bursts SET last_at = j.value ->> '$[3]', signals = j.value ->> '$[4]'
		FROM json_each(?1) j WHERE detect_bursts.org_id = j.value ->> '$[5]' AND detect_bursts.detector = j.value ->> '$[0]'
		AND detect_bursts.key = j.value ->> '$[1]' AND detect_bursts.observation_id = j.value ->> '$[2]'`
)

// settleArtifacts writes the artifacts of growths and returns how many
// each observation took.
func (t *corrTx) settleArtifacts(ctx context.Context, growths []correlate.Growth) (map[string]int, error) {
	var rows [][2]any
	for _, g := range growths {
		if len(g.ArtifactIDs) > 0 {
			rows = append(rows, [2]any{g.ObservationID, g.ArtifactIDs})
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	list, err := json.Marshal(rows)
	if err != nil {
		return nil, fmt.Errorf("observation growths: %w", err)
	}
	res, err := t.tx.QueryContext(ctx, settleArtifactsSQL, string(list), t.org, vigil.MaxObservationArtifacts)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	added := map[string]int{}
	for res.Next() {
		var id string
		if err := res.Scan(&id); err != nil {
			return nil, err
		}
		added[id]++
	}
	return added, res.Err()
}
