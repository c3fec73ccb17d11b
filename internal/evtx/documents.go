package evtx

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Documents reads every record of the .evtx file at path, in order, as the
// Winlogbeat document (Record.Winlogbeat) vigil import sends for it. Any
// damaged chunk or record is an error: for files that must read whole
// (the recordings tests and the bench replay).
func Documents(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out [][]byte
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		doc, err := rec.Winlogbeat()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, doc)
	}
}
