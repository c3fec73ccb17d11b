package sqlite

import (
	"context"
	"strings"

	"github.com/vigil-soc/vigil/internal/correlate"
)

var _ correlate.SpillRecorder = (*corrTx)(nil)

// RecordSpilled records the signals of the keys a full Tally spilled, as
// RecordSignals would, spillRows rows a statement (then halves of that
// for the rest): on an internet-facing host that is hundreds of keys a
// batch, each of one signal, and a statement a signal cost more in the
// driver than in SQLite. A key the newest-signals cache holds goes
// through RecordSignals, which keeps its entry whole.
func (t *corrTx) RecordSpilled(ctx context.Context, ks []correlate.KeySignals) error {
	n := 0
	for _, k := range ks {
		n += len(k.Signals)
	}
	rows := make([]any, 0, n*signalCols)
	n = 0
	for _, k := range ks {
		if t.newest.holds(signalKey{t.org, k.DetectionKey}) {
			if _, err := t.RecordSignals(ctx, k.DetectionKey, k.Signals); err != nil {
				return err
			}
			continue
		}
		for _, sg := range k.Signals {
			var nodes, unit any // NULL
			if len(sg.Nodes) > 0 {
				nodes = correlate.AppendStoredNodes(nil, k.Key, sg.Member, sg.Nodes)
			}
			if sg.Unit != "" {
				unit = sg.Unit
			}
			rows = append(rows, t.org, k.Detector, k.Key, sg.ArtifactID, nanos(sg.At), sg.Member, nodes, sg.Weight(), unit)
			n++
		}
	}
	for size := spillRows; n > 0; size /= 2 {
		for ; n >= size; n -= size {
			if _, err := t.tx.ExecContext(ctx, insertSignalsSQL[size], rows[:size*signalCols]...); err != nil {
				return err
			}
			rows = rows[size*signalCols:]
		}
	}
	return nil
}

// spillRows is the most rows of one statement of RecordSpilled: its
// statements are of spillRows, spillRows/2, … 1 rows, each prepared once.
const spillRows = 64

// signalCols are the columns of a row of detect_signals RecordSpilled
// writes.
const signalCols = 9

// insertSignalsSQL are the INSERTs of n rows of detect_signals by n
// (spillRows and its halves), as RecordSignals writes one: a row already
// there stays as it is.
var insertSignalsSQL = func() map[int]string {
	out := map[int]string{}
	for n := spillRows; n > 0; n /= 2 {
		out[n] = `INSERT INTO detect_signals (org_id, detector, key, artifact_id, at, member, nodes, weight, unit) VALUES ` +
			strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?), ", n-1) + `(?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	}
	return out
}()
