package vlogs

import (
	"context"
	"fmt"

	"github.com/vigil-soc/vigil"
)

// LoadArtifacts writes arts of org straight to the storage nodes as
// VictoriaLogs entries, the next node in turn, for vigil bench --fill:
// no claims in PostgreSQL (GetArtifacts by id does not find them; search
// does), no sync to disk (each node writes them within its
// -inmemoryDataFlushInterval) and no check for ids stored before. Raw
// lines too long for one entry are cut to their preview. Not for the
// pipeline: InsertArtifacts is.
func (s *Store) LoadArtifacts(ctx context.Context, org string, arts []*vigil.Artifact) error {
	if len(arts) == 0 {
		return nil
	}
	t, err := s.Tenant(ctx, org)
	if err != nil {
		return err
	}
	body := make([]byte, 0, len(arts)*600)
	for _, a := range arts {
		body, _ = entry(body, a)
		body = append(body, '\n')
	}
	if err := s.c.insert(ctx, s.c.storage[s.c.pick()], t, body); err != nil {
		return fmt.Errorf("load artifacts: %w", err)
	}
	return nil
}

// FlushAll makes every storage node write what it holds in memory, so
// that a search sees everything loaded (LoadArtifacts) and the data dirs
// hold it.
func (s *Store) FlushAll(ctx context.Context) error {
	for _, n := range s.c.storage {
		if _, err := s.c.call(ctx, "force_flush", n.url, "/internal/force_flush", nil); err != nil {
			return err
		}
	}
	return nil
}
