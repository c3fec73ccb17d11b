package pipeline

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// AccountJoiner records the security identifiers of Windows accounts
// (a vigil.NodeStore).
type AccountJoiner interface {
	JoinAccounts(ctx context.Context, org string, names []vigil.AccountSID) error
}

// accountJoins hands the store the accounts and SIDs that a batch's
// Windows events name (parse.WindowsSIDs), each (org, SID, name) once per
// process: a host's events name the same few accounts again and again.
type accountJoins struct {
	store AccountJoiner
	mu    sync.Mutex
	sent  map[accountSent]bool
}

type accountSent struct {
	org string
	vigil.AccountSID
}

// maxAccountsSent bounds what accountJoins remembers sending: past it, it
// forgets all and sends each again once (the store keeps the first).
const maxAccountsSent = 100_000

// join records the accounts of events in org before their detections
// name their nodes, so that a name joined by its SID in a batch is the
// account's node in that batch already.
func (j *accountJoins) join(ctx context.Context, org string, events []parse.Event) error {
	var names []vigil.AccountSID
	j.mu.Lock()
	for _, ev := range events {
		for _, a := range parse.WindowsSIDs(ev) {
			if !j.sent[accountSent{org, a}] && !slices.Contains(names, a) {
				names = append(names, a)
			}
		}
	}
	j.mu.Unlock()
	if len(names) == 0 {
		return nil
	}
	// In one order everywhere: two workers never wait on each other.
	slices.SortFunc(names, func(a, b vigil.AccountSID) int {
		return cmp.Or(cmp.Compare(a.SID, b.SID), cmp.Compare(a.Account, b.Account))
	})
	if err := j.store.JoinAccounts(ctx, org, names); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.sent == nil || len(j.sent)+len(names) > maxAccountsSent {
		j.sent = map[accountSent]bool{}
	}
	for _, a := range names {
		j.sent[accountSent{org, a}] = true
	}
	return nil
}
