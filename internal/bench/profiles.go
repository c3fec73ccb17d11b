package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

// cpuProfile is the --cpuprofile of the load phase: one file, or with
// --cpuprofile-every one file a period (--cpuprofile.1, .2, …), so that
// the first minutes of a long run can be compared with its last
// (go tool pprof -diff_base F.1 F.6).
type cpuProfile struct {
	name  string
	every time.Duration
	mu    sync.Mutex
	f     *os.File // nil: not profiling
	n     int      // the period being written, from 1
	done  chan struct{}
	wg    sync.WaitGroup
}

// startCPUProfile starts profiling to --cpuprofile, or returns nil when
// none was asked for.
func (b *bench) startCPUProfile(ctx context.Context) (*cpuProfile, error) {
	if b.f.CPUProfile == "" {
		return nil, nil
	}
	p := &cpuProfile{name: b.f.CPUProfile, every: b.f.CPUProfileEvery, done: make(chan struct{})}
	if err := p.open(); err != nil {
		return nil, err
	}
	if p.every > 0 {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			t := time.NewTicker(p.every)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-p.done:
					return
				case <-t.C:
				}
				name, err := p.rotate()
				if err != nil {
					b.problem("--cpuprofile-every: %v", err)
					return
				}
				b.logf("CPU profile %s written", name)
			}
		}()
	}
	return p, nil
}

// rotate ends the current file and starts the next, returning the name
// of the one ended.
func (p *cpuProfile) rotate() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ended := fmt.Sprintf("%s.%d", p.name, p.n)
	if err := p.close(); err != nil {
		return ended, err
	}
	return ended, p.open()
}

// open starts the next file; the caller holds mu (or is alone).
func (p *cpuProfile) open() error {
	name := p.name
	if p.every > 0 {
		p.n++
		name = fmt.Sprintf("%s.%d", p.name, p.n)
	}
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	p.f = f
	return nil
}

// close ends the current file; the caller holds mu.
func (p *cpuProfile) close() error {
	if p.f == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := p.f.Close()
	p.f = nil
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	return nil
}

// stop ends profiling; it may be called more than once, and on nil.
func (p *cpuProfile) stop() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	err := p.close()
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// heapProfiles writes a heap profile of this process, after a
// collection, every --memprofile-every to --memprofile.1, .2, … until the
// returned stop is called: what grows over a long run. Only the embedded
// server's heap is this process's.
func (b *bench) heapProfiles(ctx context.Context) (stop func()) {
	if b.f.MemProfile == "" || b.f.MemProfileEvery <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(b.f.MemProfileEvery)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-t.C:
			}
			name := fmt.Sprintf("%s.%d", b.f.MemProfile, n)
			var ms runtime.MemStats
			err := writeFile(name, func(w io.Writer) error {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				return pprof.Lookup("heap").WriteTo(w, 0)
			})
			if err != nil {
				b.problem("--memprofile-every: %v", err)
				return
			}
			b.logf("heap profile %s: %.0f MiB in use after a collection, %d objects", name, float64(ms.HeapAlloc)/(1<<20), ms.HeapObjects)
		}
	}()
	return func() { close(done); <-finished }
}
