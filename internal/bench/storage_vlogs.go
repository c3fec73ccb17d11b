package bench

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/postgres"
	"github.com/vigil-soc/vigil/internal/vlogs"
)

// openVLogs opens the VictoriaLogs store of --artifacts-url over pg.
func openVLogs(pg *postgres.Store, front, storage string) (*vlogs.Store, error) {
	c, err := vlogs.ParseURLs(front, storage)
	if err != nil {
		return nil, err
	}
	return vlogs.New(pg, c), nil
}

// flushWait is how long the storage nodes are given, after a forced
// flush, to write their in-memory parts to files: twice their
// -inmemoryDataFlushInterval (5 s by default).
const flushWait = 10 * time.Second

// measureVLogsDisk sizes the storage nodes' data dirs (--artifacts-data)
// against the org's artifacts and the raw bytes the run stored (the
// fill's and the load's). The nodes are first told to flush, then given
// flushWait to write the parts: what is still in memory after it is not
// counted.
func (b *bench) measureVLogsDisk(ctx context.Context) (*DiskReport, error) {
	pg, err := postgres.Open(ctx, b.f.DatabaseURL, postgres.Options{})
	if err != nil {
		return nil, err
	}
	defer pg.Close()
	vs, err := openVLogs(pg, b.f.ArtifactsURL, b.f.ArtifactsStorage)
	if err != nil {
		return nil, err
	}
	if err := vs.FlushAll(ctx); err != nil {
		return nil, err
	}
	select {
	case <-time.After(flushWait):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	d := &DiskReport{Files: map[string]int64{}, VictoriaLogs: true}
	for _, dir := range strings.Split(b.f.ArtifactsData, ",") {
		if dir = strings.TrimSpace(dir); dir == "" {
			continue
		}
		err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() {
				return err
			}
			if strings.Contains(path, string(filepath.Separator)+"snapshots"+string(filepath.Separator)) {
				return nil // hard links of parts counted already
			}
			info, err := e.Info()
			if err != nil {
				return err
			}
			d.Files[dir] += info.Size()
			d.Bytes += info.Size()
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	_, n, err := vs.SearchArtifacts(ctx, b.f.Org, vigil.ArtifactFilter{Page: vigil.Page{Limit: 1}})
	if err != nil {
		return nil, err
	}
	d.Artifacts = int64(n)
	if f := b.rep.Fill; f != nil {
		d.RawBytes += f.RawBytes
	}
	if l := b.rep.Load; l != nil && l.Accepted > 0 {
		d.RawBytes += int64(float64(l.Accepted) * b.rawPerLine())
	}
	if d.Artifacts > 0 {
		d.BytesPerArtifact = float64(d.Bytes) / float64(d.Artifacts)
	}
	if d.RawBytes > 0 {
		d.RatioToRaw = float64(d.Bytes) / float64(d.RawBytes)
	}
	return d, nil
}

// rawPerLine is the mean raw bytes of the lines the load replays.
func (b *bench) rawPerLine() float64 {
	if len(b.lines) == 0 {
		return 0
	}
	var n int
	for _, l := range b.lines {
		n += len(l.Raw)
	}
	return float64(n) / float64(len(b.lines))
}
