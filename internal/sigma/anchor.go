package sigma

import "strings"

// rareLetters lists the letters rarest in log lines first (roughly, by
// English frequency): an anchor among the first costs fewer candidates.
const rareLetters = "zqxjkvbpygfwmucldrhsnioate"

// anchorRank scores a byte as a search anchor, lower is better: most
// punctuation (rare, one case), digits, rare letters, then '.', '-',
// '_', then common letters and space.
func anchorRank(c byte) int {
	switch {
	case 'a' <= c && c <= 'z':
		return 4 + strings.IndexByte(rareLetters, c)/3
	case c == ' ':
		return 11
	case c == '.' || c == '-' || c == '_':
		return 6
	case '0' <= c && c <= '9':
		return 3
	}
	return 1
}

// anchorOf returns the offset of the byte of lower (an ASCII literal in
// lower case) that an uncased search looks for first: the one of best
// anchorRank, the first of equals; 0 for "".
func anchorOf(lower string) int {
	best, rank := 0, 1<<30
	for i := 0; i < len(lower); i++ {
		if r := anchorRank(lower[i]); r < rank {
			best, rank = i, r
		}
	}
	return best
}

// indexFoldAnchored returns the first index of lower (ASCII, lower case)
// in s, folding ASCII letters of s, or -1. It looks for the byte of lower
// at offset anchor in either case (one vectorized strings.IndexByte per
// case, each searched again only once passed) and checks each candidate
// in full.
func indexFoldAnchored(s, lower string, anchor int) int {
	n := len(lower)
	if n == 0 {
		return 0
	}
	lo := lower[anchor]
	up := lo
	if 'a' <= lo && lo <= 'z' {
		up -= 'a' - 'A'
	}
	// The anchor byte of a match at j is at j+anchor, for j in [0, last].
	last := len(s) - n
	// nextLo and nextUp are the next anchor positions of each case at
	// or after i+anchor (-1: none left).
	nextLo, nextUp := -2, -2
	for i := 0; i <= last; {
		lim := last + anchor + 1
		if nextLo != -1 && nextLo < i+anchor {
			if nextLo = strings.IndexByte(s[i+anchor:lim], lo); nextLo >= 0 {
				nextLo += i + anchor
			}
		}
		if up == lo {
			nextUp = nextLo
		} else if nextUp != -1 && nextUp < i+anchor {
			if nextUp = strings.IndexByte(s[i+anchor:lim], up); nextUp >= 0 {
				nextUp += i + anchor
			}
		}
		k := nextLo
		if k < 0 || nextUp >= 0 && nextUp < k {
			k = nextUp
		}
		if k < 0 {
			return -1
		}
		j := k - anchor
		if equalFoldASCII(s[j:j+n], lower) {
			return j
		}
		i = j + 1
	}
	return -1
}
