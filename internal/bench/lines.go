package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/client"
	"github.com/vigil-soc/vigil/internal/parse"
)

// sources are the dataset directories replayed by default, each
// directory's name being the artifacts' source.
var sources = []string{"auth", "dns", "firewall", "suricata"}

// line is one replayed log line.
type line struct{ Source, Raw string }

// loadLines reads the replayed lines (or generates them), shuffles them
// with a fixed seed so that every batch is a mix of sources, and encodes
// the POST bodies once, so that the clients spend no CPU on JSON.
func (b *bench) loadLines() error {
	var err error
	b.lines, b.rep.Settings.Files, err = linesOf(b.f.Files, time.Now())
	if err != nil {
		return err
	}
	if len(b.lines) == 0 {
		return errors.New("no lines to replay")
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(b.lines), func(i, j int) { b.lines[i], b.lines[j] = b.lines[j], b.lines[i] })
	packLines(b.lines)

	b.rep.Settings.LinesBySource = map[string]int{}
	var lineBytes int
	for _, l := range b.lines {
		b.rep.Settings.LinesBySource[l.Source]++
		lineBytes += len(l.Raw)
	}
	b.rep.Settings.Lines = len(b.lines)
	b.rep.Settings.AvgLineBytes = float64(lineBytes) / float64(len(b.lines))

	bodyBytes, err := b.encodeBodies()
	if err != nil {
		return err
	}
	if b.f.Times == "original" {
		// The time the pipeline will keep (Processor.parse): the parsed
		// event time when plausible, else the time of receipt.
		now := time.Now()
		b.times = make([]time.Time, len(b.lines))
		for i, l := range b.lines {
			b.times[i] = now
			if t := parse.Parse(l.Source, []byte(l.Raw), now).Time; vigil.ValidTimestamp(t) {
				b.times[i] = t.UTC()
			}
		}
	}
	b.rep.Settings.AvgBodyBytes = float64(bodyBytes) / float64(len(b.bodies))
	b.rep.Settings.Clients, b.rep.Settings.Batch, b.rep.Settings.Duration = b.f.Clients, b.f.Batch, b.f.Duration.String()
	b.rep.Settings.Artifacts = b.f.Artifacts
	b.rep.Settings.Times, b.rep.Settings.Via = b.f.Times, b.f.Via
	return nil
}

// packLines makes the lines' texts substrings of one string, in their
// order, and their sources shared: the embedded server's collector marks
// the bench's heap too, at every cycle, and 200,000 lines of their own
// (the internet mixes make each with fmt.Sprintf) were the most objects
// of its live heap after the server's own state.
func packLines(lines []line) {
	n := 0
	for _, l := range lines {
		n += len(l.Raw)
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, l := range lines {
		sb.WriteString(l.Raw)
	}
	all, sources, off := sb.String(), map[string]string{}, 0
	for i := range lines {
		lines[i].Raw = all[off : off+len(lines[i].Raw)]
		off += len(lines[i].Raw)
		if s, ok := sources[lines[i].Source]; ok {
			lines[i].Source = s
		} else {
			sources[lines[i].Source] = lines[i].Source
		}
	}
}

// linesOf reads (or generates) the lines that files names, as --files
// takes it, and names what they are.
func linesOf(files string, now time.Time) ([]line, []string, error) {
	switch {
	case files == "synthetic":
		return syntheticLines(20000, now), []string{"synthetic"}, nil
	case files == "internet-zipf" || files == "internet-unique":
		return internetLines(internetLineCount, now, files == "internet-unique"), []string{files}, nil
	case files == "windows":
		dir := findDatasets()
		if dir == "" {
			return nil, nil, errors.New("--files windows: ../shared/datasets not found")
		}
		ls, err := windowsLines(filepath.Join(dir, "windows", "evtx"))
		return ls, []string{"windows (the records of ../shared/datasets/windows/evtx)"}, err
	case files == "internet-edge":
		return edgeLines(internetLineCount, now), []string{files}, nil
	case files == "":
		dir := findDatasets()
		if dir == "" {
			return syntheticLines(20000, now), []string{"synthetic (no ../shared/datasets found)"}, nil
		}
		var specs []string
		for _, s := range sources {
			if st, err := os.Stat(filepath.Join(dir, s)); err == nil && st.IsDir() {
				specs = append(specs, filepath.Join(dir, s))
			}
		}
		return readLines(specs)
	default:
		return readLines(strings.Split(files, ","))
	}
}

// encodeBodies encodes the lines, in order and wrapping around, into POST
// bodies of f.Batch artifacts each, and returns their total size.
func (b *bench) encodeBodies() (int, error) {
	n := (len(b.lines) + b.f.Batch - 1) / b.f.Batch
	var bodyBytes int
	for i := 0; i < n; i++ {
		start := i * b.f.Batch
		b.spans = append(b.spans, [2]int{start, b.f.Batch})
		switch b.f.Via {
		case ViaElastic:
			body, err := b.encodeBulk(start)
			if err != nil {
				return 0, err
			}
			b.bodies = append(b.bodies, body)
			bodyBytes += len(body)
			continue
		case ViaSyslog:
			frames, size := b.encodeFrames(start)
			b.frames = append(b.frames, frames)
			b.bodies = append(b.bodies, nil)
			bodyBytes += size
			continue
		}
		var buf bytes.Buffer
		buf.WriteString(`{"artifacts":[`)
		for k := 0; k < b.f.Batch; k++ {
			l := b.lines[(start+k)%len(b.lines)]
			if k > 0 {
				buf.WriteByte(',')
			}
			item, err := json.Marshal(client.NewArtifact{Source: l.Source, Raw: l.Raw, Timestamp: b.stampPlaceholder()})
			if err != nil {
				return 0, fmt.Errorf("encode a batch: %w", err)
			}
			buf.Write(item)
		}
		buf.WriteString(`]}`)
		b.bodies = append(b.bodies, buf.Bytes())
		bodyBytes += buf.Len()
	}
	b.sent = make([]int64, len(b.bodies))
	return bodyBytes, nil
}

// timePlaceholder stands for the send time in pre-encoded bodies of
// --times live; a timestamp of the same length replaces it at each POST.
const timePlaceholder = "2000-01-01T00:00:00.000Z"

func (b *bench) stampPlaceholder() string {
	if b.f.Times == "live" {
		return timePlaceholder
	}
	return ""
}

// body returns body i as the round-th pass over the bodies sends it:
// stamped, and renumbered (internet-unique) in the copy the stamp made.
func (b *bench) body(i, round int) []byte {
	return b.renumber(b.stamp(b.bodies[i]), round, b.f.Times == "live")
}

// stamp returns body with the send time in place of the placeholder
// (--times live), or body itself.
func (b *bench) stamp(body []byte) []byte {
	if b.f.Times != "live" {
		return body
	}
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	return bytes.ReplaceAll(body, []byte(timePlaceholder), []byte(now))
}

// findDatasets looks for ../shared/datasets from the working directory and
// each of its parents (so that it is found from a package directory too).
func findDatasets() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := wd; ; d = filepath.Dir(d) {
		cand := filepath.Join(d, "..", "shared", "datasets")
		for _, s := range sources {
			if st, err := os.Stat(filepath.Join(cand, s)); err == nil && st.IsDir() {
				return filepath.Clean(cand)
			}
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// readLines reads every non-empty line of the files (directories: every
// regular file in them, recursively). The source is the name of the file's
// directory, unless the spec is source=path.
func readLines(specs []string) ([]line, []string, error) {
	var out []line
	var files []string
	for _, spec := range specs {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		forced := ""
		if s, p, ok := strings.Cut(spec, "="); ok && vigil.ValidateSource(s) == "" {
			forced, spec = s, p
		}
		var paths []string
		err := filepath.WalkDir(spec, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				paths = append(paths, path)
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("--files: %w", err)
		}
		sort.Strings(paths)
		for _, p := range paths {
			src := forced
			if src == "" {
				src = strings.ToLower(filepath.Base(filepath.Dir(p)))
			}
			if issue := vigil.ValidateSource(src); issue != "" {
				return nil, nil, fmt.Errorf("--files: source %q of %s %s; use source=path", src, p, issue)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, nil, fmt.Errorf("--files: %w", err)
			}
			files = append(files, src+"="+p)
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(make([]byte, 64<<10), vigil.MaxRawBytes+1)
			for sc.Scan() {
				l := strings.TrimRight(sc.Text(), "\r")
				if strings.TrimSpace(l) == "" || len(l) > vigil.MaxRawBytes {
					continue
				}
				out = append(out, line{Source: src, Raw: l})
			}
			if err := sc.Err(); err != nil {
				return nil, nil, fmt.Errorf("--files: %s: %w", p, err)
			}
		}
	}
	return out, files, nil
}
