package correlate

import (
	"cmp"
	"slices"

	"github.com/vigil-soc/vigil"
)

// recordedSignals are the signals a transaction recorded of a key the
// store held nothing of that counts with them (routed.fresh): every
// signal the store's reads of the key could return, so they are read
// from here instead — a scanner's one alert was three reads (its bursts,
// its signals, its window with nodes) of what the transaction had just
// written. They read back as the store's do: by time, then artifact id,
// in UTC, each with its weight as its count and its nodes as stored.
type recordedSignals struct {
	sigs []vigil.Signal
}

func newRecordedSignals(k DetectionKey, fresh []vigil.Signal) *recordedSignals {
	out := make([]vigil.Signal, len(fresh))
	for i, sg := range fresh {
		w := sg.Weight()
		r := vigil.Signal{ArtifactID: sg.ArtifactID, At: fromNanos(nanos(sg.At)), Member: sg.Member, Count: w, Evidence: w == 0}
		if len(sg.Nodes) > 0 {
			r.Nodes, _ = StoredNodes(k.Key, sg.Member, AppendStoredNodes(nil, k.Key, sg.Member, sg.Nodes))
		}
		out[i] = r
	}
	slices.SortFunc(out, func(a, b vigil.Signal) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.ArtifactID, b.ArtifactID)
	})
	return &recordedSignals{sigs: out}
}

// from is Tx.SignalsFrom of the key (of fewer than maxBurstScan
// signals): the time, weight and member of the signals at or after
// floor, oldest first.
func (r *recordedSignals) from(floor int64) []vigil.Signal {
	var out []vigil.Signal
	for _, sg := range r.sigs {
		if nanos(sg.At) >= floor {
			out = append(out, vigil.Signal{At: sg.At, Member: sg.Member, Count: sg.Count, Evidence: sg.Evidence})
		}
	}
	return out
}

// window is Tx.WindowSignals of the key: the first limit signals in
// [from, to] with their nodes, oldest first.
func (r *recordedSignals) window(from, to int64, limit int) []vigil.Signal {
	var out []vigil.Signal
	for _, sg := range r.sigs {
		if at := nanos(sg.At); at >= from && at <= to && len(out) < limit {
			sg.Nodes = slices.Clone(sg.Nodes)
			out = append(out, sg)
		}
	}
	return out
}
