package bench

import (
	"fmt"
	"io/fs"
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
		docs, err := evtx.Documents(p)
		if err != nil {
			return nil, err
		}
		for _, doc := range docs {
			out = append(out, line{Source: "windows", Raw: string(doc)})
		}
	}
	return out, nil
}
