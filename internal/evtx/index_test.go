package evtx

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// datasetDir holds the real attack recordings (EVTX-ATTACK-SAMPLES) and an
// INDEX.md whose counts were made with python-evtx, a reader written
// independently of this one.
const datasetDir = "../../../shared/datasets/windows/evtx"

// indexEntry is one file's line of INDEX.md: its records and its events
// counted per channel and event ID.
type indexEntry struct {
	path    string
	records int
	counts  map[string]int // "Security 4625" → n
}

func readIndex(t *testing.T) []indexEntry {
	t.Helper()
	f, err := os.Open(filepath.Join(datasetDir, "INDEX.md"))
	if err != nil {
		t.Fatalf("datasets (../shared/datasets beside the checkout): %v", err)
	}
	defer f.Close()
	short := map[string]string{}
	shortRe := regexp.MustCompile("([A-Za-z-]+) = `([^`]+)`")
	var out []indexEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Channel short names:") {
			for _, m := range shortRe.FindAllStringSubmatch(line, -1) {
				short[m[1]] = m[2]
			}
			continue
		}
		cols := strings.Split(line, "|")
		if len(cols) != 10 || !strings.HasPrefix(strings.TrimSpace(cols[1]), "`") {
			continue
		}
		e := indexEntry{path: strings.Trim(strings.TrimSpace(cols[1]), "`"), counts: map[string]int{}}
		if e.records, err = strconv.Atoi(strings.TrimSpace(cols[6])); err != nil {
			t.Fatalf("INDEX.md %s: records %q", e.path, cols[6])
		}
		for _, group := range strings.Split(cols[8], ";") {
			fields := strings.Fields(strings.ReplaceAll(group, ",", " "))
			if len(fields) == 0 {
				continue
			}
			channel := fields[0]
			if long, ok := short[channel]; ok {
				channel = long
			}
			for _, f := range fields[1:] {
				id, n, ok := strings.Cut(f, "×")
				count, err := strconv.Atoi(n)
				if !ok || err != nil {
					t.Fatalf("INDEX.md %s: %q", e.path, f)
				}
				e.counts[channel+" "+id] += count
			}
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		t.Fatal("INDEX.md lists no files")
	}
	return out
}

// TestReadsEveryRecordOfTheDatasets reads the 167 real recordings and
// compares every file's records, per channel and event ID, with the counts
// python-evtx made of the same files.
func TestReadsEveryRecordOfTheDatasets(t *testing.T) {
	for _, e := range readIndex(t) {
		t.Run(e.path, func(t *testing.T) {
			got, n, err := countFile(filepath.Join(datasetDir, e.path))
			if err != nil {
				t.Fatal(err)
			}
			if n != e.records {
				t.Errorf("%d records, INDEX.md says %d", n, e.records)
			}
			for k, want := range e.counts {
				if got[k] != want {
					t.Errorf("%s: %d events, INDEX.md says %d", k, got[k], want)
				}
			}
			for k, n := range got {
				if _, ok := e.counts[k]; !ok {
					t.Errorf("%s: %d events that INDEX.md does not list", k, n)
				}
			}
		})
	}
}

func countFile(path string) (map[string]int, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	r, err := NewReader(f)
	if err != nil {
		return nil, 0, err
	}
	counts := map[string]int{}
	n := 0
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return counts, n, nil
		}
		if err != nil {
			return nil, 0, err
		}
		sys := rec.Event.Child("System")
		if sys == nil {
			return nil, 0, fmt.Errorf("record %d has no System element", rec.ID)
		}
		n++
		counts[sys.Child("Channel").Text+" "+sys.Child("EventID").Text]++
	}
}
