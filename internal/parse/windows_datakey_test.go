package parse

import (
	"strconv"
	"sync"
	"testing"
)

// TestDataKeyConcurrent: names looked up and added by many goroutines at
// once (the workers parse batches in parallel) come back as they were
// given, each kind's field name its own, whether found in the map no one
// writes or among the new names; run with -race.
func TestDataKeyConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 3000 {
				name := "TestItem" + strconv.Itoa((i*7+g)%2500)
				kind := "event_data"
				if i%3 == 0 {
					kind = "user_data"
				}
				short, full := dataKey(kind, []byte(name))
				if short != name || full != "winlog."+kind+"."+name {
					t.Errorf("dataKey(%s, %s) = %q, %q", kind, name, short, full)
					return
				}
			}
		})
	}
	wg.Wait()
}
