package sigma

import "strings"

// anchorOf returns the offset of the byte of lower (an ASCII literal in
// lower case) that an uncased search looks for first: a byte that is no
// letter (one case only, so one vectorized strings.IndexByte finds its
// candidates) and, of those, the rarest in log lines by a rough ranking
// (punctuation, then digits, then '.', '-', '_', then space); -1 when
// lower has only letters.
func anchorOf(lower string) int {
	best, rank := -1, 5
	for i := 0; i < len(lower); i++ {
		c := lower[i]
		r := 1
		switch {
		case 'a' <= c && c <= 'z' || c >= 0x80:
			continue
		case c == ' ':
			r = 4
		case c == '.' || c == '-' || c == '_':
			r = 3
		case '0' <= c && c <= '9':
			r = 2
		}
		if r < rank {
			best, rank = i, r
		}
	}
	return best
}

// indexFoldAnchored is indexFoldASCII for a literal with an anchor (a
// byte that is no letter, at offset anchor): each occurrence of that
// byte in s is a candidate, checked in full.
func indexFoldAnchored(s, lower string, anchor int) int {
	n := len(lower)
	b := lower[anchor]
	for i := anchor; i+n-anchor <= len(s); {
		k := strings.IndexByte(s[i:len(s)-(n-anchor)+1], b)
		if k < 0 {
			return -1
		}
		j := i + k - anchor
		if equalFoldASCII(s[j:j+n], lower) {
			return j
		}
		i += k + 1
	}
	return -1
}
