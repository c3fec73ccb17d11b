package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/client"
)

// BenchmarkIngest compares the syslog TCP listener with POST
// /v1/artifacts end to end: one op is the dataset lines (auth, dns,
// firewall, suricata, as vigil bench replays them) sent and every one of
// them stored and searchable, on vigil serve's embedded default. HTTP:
// four clients posting batches of 1000 (vigil bench's defaults). Syslog:
// one TCP connection per dataset, octet-counted, each to a listener whose
// source= is that dataset's, so that both paths parse the same lines as
// the same sources. It reports artifacts/s and the server's peak RSS.
//
//	go test ./internal/e2e -run '^$' -bench Ingest -benchtime 3x
func BenchmarkIngest(b *testing.B) {
	sets := benchLines(b)
	total := 0
	for _, s := range sets {
		total += len(s.lines)
	}
	b.Run("http", func(b *testing.B) {
		dir := b.TempDir()
		p := startVigil(b, "vigil", dir, "--ingest-wait", "0")
		c := newClient(p, mintToken(b, dir, "bench", "signals:write", "signals:read"))
		var bodies [][]client.NewArtifact
		for _, s := range sets {
			for i := 0; i < len(s.lines); i += 1000 {
				var batch []client.NewArtifact
				for _, l := range s.lines[i:min(i+1000, len(s.lines))] {
					batch = append(batch, client.NewArtifact{Source: s.source, Raw: l})
				}
				bodies = append(bodies, batch)
			}
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			work := make(chan []client.NewArtifact, len(bodies))
			for _, bd := range bodies {
				work <- bd
			}
			close(work)
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for bd := range work {
						for {
							r, err := c.PostArtifacts(ctx, bd)
							if err != nil {
								b.Error(err)
								return
							}
							if r.Status/100 == 2 {
								break
							}
							time.Sleep(r.RetryAfter) // a 429: the same batch again
						}
					}
				}()
			}
			wg.Wait()
			awaitTotal(b, ctx, c, total*(i+1), "every line stored")
			cancel()
		}
		b.StopTimer()
		report(b, p, total)
	})
	b.Run("syslog-tcp", func(b *testing.B) {
		dir := b.TempDir()
		args := []string{"--ingest-wait", "0"}
		for _, s := range sets {
			args = append(args, "--syslog-listen", fmt.Sprintf("tcp://127.0.0.1:0?org=bench&name=%s&source=%s&max-message=1MiB", s.source, s.source))
		}
		p := startVigil(b, "vigil", dir, args...)
		c := newClient(p, mintToken(b, dir, "bench", "signals:read"))
		ports := syslogPorts(b, p)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			var wg sync.WaitGroup
			for _, s := range sets {
				wg.Add(1)
				go func() {
					defer wg.Done()
					conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", ports[s.source]))
					if err != nil {
						b.Error(err)
						return
					}
					defer conn.Close()
					w := bufio.NewWriterSize(conn, 64<<10)
					for _, l := range s.lines {
						w.WriteString(strconv.Itoa(len(l)))
						w.WriteByte(' ')
						w.WriteString(l)
					}
					if err := w.Flush(); err != nil {
						b.Error(err)
					}
				}()
			}
			wg.Wait()
			awaitTotal(b, ctx, c, total*(i+1), "every line stored")
			cancel()
		}
		b.StopTimer()
		report(b, p, total)
	})
}

type lineSet struct {
	source string
	lines  []string
}

// benchLines reads the datasets vigil bench replays by default.
func benchLines(b *testing.B) []lineSet {
	var sets []lineSet
	for _, src := range []string{"auth", "dns", "firewall", "suricata"} {
		paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "datasets", src, "*"))
		s := lineSet{source: src}
		for _, p := range paths {
			f, err := os.Open(p)
			if err != nil {
				b.Fatal(err)
			}
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if l := sc.Text(); strings.TrimSpace(l) != "" && len(l) <= 1<<20 {
					s.lines = append(s.lines, l)
				}
			}
			f.Close()
		}
		if len(s.lines) == 0 {
			b.Fatalf("no lines in ../shared/datasets/%s", src)
		}
		sets = append(sets, s)
	}
	return sets
}

func report(b *testing.B, p *proc, total int) {
	b.ReportMetric(float64(total*b.N)/b.Elapsed().Seconds(), "artifacts/s")
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid)); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
				kb, _ := strconv.Atoi(f[1])
				b.ReportMetric(float64(kb)/1024, "peak-RSS-MB")
			}
		}
	}
}
