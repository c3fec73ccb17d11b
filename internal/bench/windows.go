package bench

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/vigil-soc/vigil/internal/evtx"
)

// windowsLines reads every record of the real Windows recordings under
// dir (../shared/datasets/windows/evtx) as the documents vigil import
// sends, source windows: the Windows mix (--files windows).
func windowsLines(dir string) ([]line, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".evtx" {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no .evtx files under %s", dir)
	}
	sort.Strings(files)
	var out []line
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		r, err := evtx.NewReader(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			doc, err := rec.Winlogbeat()
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			out = append(out, line{Source: "windows", Raw: string(doc)})
		}
		f.Close()
	}
	return out, nil
}
