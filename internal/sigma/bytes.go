package sigma

// Grams is a sketch of a raw line, read once for every rule: the bytes
// and pairs of adjacent bytes it holds (ASCII letters folded to lower
// case), hashed into 512 bits. A keyword with a byte or pair the line
// lacks is no match, and is ruled out without a search; on a line of
// 150 bytes about a quarter of the bits are set, so a keyword of ten
// letters that is not in the line rarely gets past its pairs.
type Grams [8]uint64

// Add adds the bytes and pairs of s.
func (g *Grams) Add(s string) {
	var prev uint32
	for i := 0; i < len(s); i++ {
		c := uint32(fold(s[i]))
		g.set(0x10000 | c)
		if i > 0 {
			g.set(prev<<8 | c)
		}
		prev = c
	}
}

func fold(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func (g *Grams) set(k uint32) {
	h := (k * 2654435761) >> (32 - 9)
	g[h>>6] |= 1 << (h & 63)
}

// covers reports whether g holds every bit of need.
func (g *Grams) covers(need *Grams) bool {
	var miss uint64
	for i := range need {
		miss |= need[i] &^ g[i]
	}
	return miss == 0
}

// line is an event's raw line and, when known, its grams.
type line struct {
	s     string
	grams *Grams
}

// mayHold reports whether the line may hold a value p matches: false
// only when p needs a gram the line lacks.
func (l line) mayHold(p *pattern) bool {
	return l.grams == nil || !p.needs || l.grams.covers(&p.need)
}
