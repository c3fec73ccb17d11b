package correlate

import (
	"strings"
	"testing"
)

// TestColdKeys: keys short and long keep their signals, one inline or
// many, through get and put; a forgotten long key's number serves the
// next, and every key reads back as itself.
func TestColdKeys(t *testing.T) {
	cs := newColdKeys()
	short, long, long2 := "203.0.113.7|65535", strings.Repeat("a", inlineKey+1), "2001:db8:ffff:ffff:ffff:ffff:ffff:1"
	put := func(pair uint32, key string, ats ...int64) coldRef {
		t.Helper()
		r := cs.intern(pair, key)
		c := cs.get(r)
		if c == nil {
			c = cs.fresh()
		}
		for _, at := range ats {
			c.sigs = append(c.sigs, heldSignal{at: at, count: 1})
		}
		cs.put(r, c)
		return r
	}
	want := func(pair uint32, key string, ats ...int64) {
		t.Helper()
		r, ok := cs.find(pair, key)
		var got []int64
		if c := cs.get(r); ok && c != nil {
			for _, h := range c.sigs {
				got = append(got, h.at)
			}
		}
		if len(got) != len(ats) {
			t.Fatalf("%d %q holds %v, want %v", pair, key, got, ats)
		}
		for i := range ats {
			if got[i] != ats[i] {
				t.Fatalf("%d %q holds %v, want %v", pair, key, got, ats)
			}
		}
		if ok && len(ats) > 0 && cs.key(r) != key {
			t.Fatalf("%q reads back as %q", key, cs.key(r))
		}
	}
	put(0, short, 1)
	rl := put(0, long, 2)
	put(1, long, 3)
	put(0, short, 4, 5) // one to many
	want(0, short, 1, 4, 5)
	want(0, long, 2)
	want(1, long, 3)
	if len(cs.many) != 1 || cs.one[mustFind(t, &cs, 0, short)].at != 5 {
		t.Fatalf("many %d, the many key's entry %+v: want one key of many, its newest at 5", len(cs.many), cs.one[mustFind(t, &cs, 0, short)])
	}
	c := cs.get(mustFind(t, &cs, 0, short))
	c.trim(5) // many to one
	cs.put(mustFind(t, &cs, 0, short), c)
	want(0, short, 5)
	if len(cs.many) != 0 {
		t.Fatalf("%d keys of many, want none", len(cs.many))
	}
	cs.del(rl)
	want(0, long)
	if r := cs.intern(0, long2); r.long() != rl.long() {
		t.Fatalf("the next long key is number %d, want the forgotten %d", r.long(), rl.long())
	}
	want(1, long, 3)
	// A key promoted as it comes, never put, leaves no number behind.
	cs.del(cs.intern(2, long))
	if r := cs.intern(3, long); r.long() != rl.long()+2 {
		t.Fatalf("a long key after one forgotten unput is number %d, want %d", r.long(), rl.long()+2)
	}
	var n int
	cs.each(func(hs []heldSignal) { n += len(hs) })
	if n != 2 {
		t.Fatalf("each saw %d signals, want 2", n)
	}
}

func mustFind(t *testing.T, cs *coldKeys, pair uint32, key string) coldRef {
	t.Helper()
	r, ok := cs.find(pair, key)
	if !ok {
		t.Fatalf("no key %q", key)
	}
	return r
}
