package enrich

import (
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	var w window
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	take := func(d time.Duration, limit int) (bool, time.Duration) { return w.take(at(d), limit, time.Minute) }

	for i := range 3 {
		if ok, _ := take(time.Duration(i)*time.Second, 3); !ok {
			t.Fatalf("look-up %d refused under the limit", i)
		}
	}
	ok, wait := take(10*time.Second, 3)
	if ok || wait != 50*time.Second {
		t.Fatalf("4th in the minute: ok %v wait %v, want refused for 50s", ok, wait)
	}
	// One frees up a minute after the first, not before.
	if ok, _ := take(59*time.Second, 3); ok {
		t.Fatal("admitted before the window moved")
	}
	if ok, _ := take(60*time.Second, 3); !ok {
		t.Fatal("refused once the first is a minute old")
	}
	if ok, wait := take(60*time.Second, 3); ok || wait != time.Second {
		t.Fatalf("ok %v wait %v, want refused for 1s (the second is at 1s)", ok, wait)
	}
	// Lowering the limit applies to what was already sent: the most
	// recent two (2s, 60s) fill a limit of 2 until 2s+1m.
	if ok, wait := take(61*time.Second, 2); ok || wait != time.Second {
		t.Fatalf("limit 2 at 61s: ok %v wait %v, want refused for 1s", ok, wait)
	}
	if ok, _ := take(62*time.Second, 2); !ok {
		t.Fatal("limit 2 at 62s refused")
	}
	if ok, _ := take(62*time.Second, 2); ok {
		t.Fatal("limit 2 exceeded")
	}
	// Raising it admits more at once.
	if ok, _ := take(62*time.Second, 5); !ok {
		t.Fatal("raised limit refused")
	}
	if ok, _ := take(0, 0); ok {
		t.Fatal("limit 0 admitted")
	}
	if !w.idle(at(3*time.Minute), time.Minute) || w.idle(at(62*time.Second), time.Minute) {
		t.Fatal("idle wrong")
	}
}

// TestWindowNeverExceedsLimit checks the promise: in any period, at most
// limit admissions, whatever the pattern of attempts.
func TestWindowNeverExceedsLimit(t *testing.T) {
	var w window
	const limit = 7
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var admitted []time.Time
	for i := range 5000 {
		now := t0.Add(time.Duration(i*i%9973) * time.Millisecond * 3).Add(time.Duration(i) * 40 * time.Millisecond)
		if len(admitted) > 0 && now.Before(admitted[len(admitted)-1]) {
			continue // the clock only moves forward
		}
		if ok, _ := w.take(now, limit, time.Minute); ok {
			admitted = append(admitted, now)
		}
	}
	for i := range admitted {
		n := 0
		for j := i; j < len(admitted) && admitted[j].Sub(admitted[i]) < time.Minute; j++ {
			n++
		}
		if n > limit {
			t.Fatalf("%d admissions within a minute from %v", n, admitted[i])
		}
	}
	if len(admitted) < limit*3 {
		t.Fatalf("only %d admitted", len(admitted))
	}
}
