package parse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/vigil-soc/vigil/internal/evtx"
)

// windowsRecordings returns every record of the real recordings
// (../shared/datasets/windows/evtx) as vigil import sends it.
func windowsRecordings(tb testing.TB) [][]byte {
	tb.Helper()
	root := filepath.Join(datasetDir, "windows", "evtx")
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.evtx"))
	deeper, _ := filepath.Glob(filepath.Join(root, "*", "*", "*.evtx"))
	files = append(files, deeper...)
	if len(files) == 0 {
		tb.Fatalf("no recordings under %s (../shared/datasets beside the checkout)", root)
	}
	var docs [][]byte
	for _, f := range files {
		ds, err := evtx.Documents(f)
		if err != nil {
			tb.Fatal(err)
		}
		docs = append(docs, ds...)
	}
	return docs
}

// words splits text as the index does (docs/api.md): at every character
// that is not a letter or digit, lower case.
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// valueWords is the oracle: the words of a document's values in order,
// read with encoding/json's tokens (member names left out).
func valueWords(t *testing.T, doc []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out []string
	var inObject []bool // per open container: an object?
	expectName := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				inObject = append(inObject, v == '{')
				expectName = v == '{'
				continue
			}
			inObject = inObject[:len(inObject)-1]
		case string:
			if expectName {
				expectName = false
				continue
			}
			out = append(out, words(v)...)
		default:
			out = append(out, words(fmt.Sprint(v))...)
		}
		expectName = len(inObject) > 0 && inObject[len(inObject)-1]
	}
}

// A Windows event is indexed by the words of its values, in order, and
// none of its member names: every record of the real recordings and
// every real Winlogbeat document.
func TestSearchTextWindows(t *testing.T) {
	docs := windowsRecordings(t)
	for _, set := range readWinlogbeat(t, "*/*/*.json") {
		for _, d := range set {
			docs = append(docs, d)
		}
	}
	fewer := 0
	for _, d := range docs {
		text := SearchText(string(d))
		got, want := words(text), valueWords(t, d)
		if !slices.Equal(got, want) {
			t.Fatalf("%s\nindexed %q\nwant    %q", d, got, want)
		}
		if slices.Contains(got, "winlog") {
			t.Fatalf("member names indexed: %q", text)
		}
		if len(got) < len(words(string(d))) {
			fewer++
		}
	}
	if fewer != len(docs) {
		t.Fatalf("%d of %d documents indexed by fewer words than their whole text", fewer, len(docs))
	}
	t.Logf("%d Windows documents", len(docs))
}

// Any other line is indexed as it is: lines of every other source, JSON
// without a winlog object at the top, and documents that are not valid
// JSON or nest deeper than SearchText follows.
func TestSearchTextOthersWhole(t *testing.T) {
	var lines []string
	for _, src := range []string{"auth", "dns", "firewall", "suricata"} {
		files, _ := filepath.Glob(filepath.Join(datasetDir, src, "*"))
		for _, f := range files {
			for _, l := range readLines(t, f) {
				lines = append(lines, string(l))
			}
		}
	}
	if len(lines) < 1000 {
		t.Fatalf("%d dataset lines", len(lines))
	}
	doc := string(windowsRecordings(t)[0])
	lines = append(lines,
		`{"event":{"winlog":{"a":"b"}}}`,     // winlog, but not at the top
		`{"winlog":"x","a":"b"}`,             // not an object
		doc[:len(doc)-1],                     // cut
		doc+"x",                              // trailing text
		strings.Replace(doc, `":"`, `":`, 1), // broken
		`{"winlog":{},"a":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`}`, // deeper than followed
	)
	for _, l := range lines {
		if got := SearchText(l); got != l {
			t.Fatalf("%.300q\nindexed as %.300q", l, got)
		}
	}
}

// BenchmarkSearchText makes the text of every record of the recordings.
func BenchmarkSearchText(b *testing.B) {
	docs := windowsRecordings(b)
	raws := make([]string, len(docs))
	var size int64
	for i, d := range docs {
		raws[i] = string(d)
		size += int64(len(d))
	}
	b.SetBytes(size / int64(len(raws)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		SearchText(raws[n%len(raws)])
		n++
	}
}
