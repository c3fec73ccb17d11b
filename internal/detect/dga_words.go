package detect

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"io"
	"sort"
	"sync"
)

// dgaWordsGz is the word list of wordCover: the 72,093 distinct words of
// 4 to 20 letters of the SCOWL list as Debian's wamerican package ships it
// (/usr/share/dict/american-english, 2020.12.07-2; SCOWL's licence permits
// any use), lower-cased, sorted, one per line, gzip'ed. To rebuild it:
//
//	tr A-Z a-z </usr/share/dict/american-english |
//	  LC_ALL=C grep -E '^[a-z]{4,20}$' | LC_ALL=C sort -u | gzip -9n >dga_words.txt.gz
//
//go:embed dga_words.txt.gz
var dgaWordsGz []byte

// maxWord is the longest word of the list.
const maxWord = 20

var dgaWords = sync.OnceValue(func() []string {
	zr, err := gzip.NewReader(bytes.NewReader(dgaWordsGz))
	if err != nil {
		panic("detect: embedded word list: " + err.Error())
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		panic("detect: embedded word list: " + err.Error())
	}
	words := make([]string, 0, 72_093)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			i = len(b)
		}
		words = append(words, string(b[:i]))
		b = b[min(i+1, len(b)):]
	}
	return words
})

// isWord reports whether s is a word of the list.
func isWord(s string) bool {
	words := dgaWords()
	i := sort.SearchStrings(words, s)
	return i < len(words) && words[i] == s
}

// wordCover returns how many letters of s the best choice of
// non-overlapping dictionary words (4 letters or more) inside it covers:
// "helpdeskgeek" 12 of 12, "bootstrapcdn" 9 of 12, a random
// "dynonitnptig" none. Names people choose are mostly made of words, so a
// label whose letter pairs look only somewhat unlikely is judged by it.
func wordCover(s string) int {
	best := make([]int, len(s)+1)
	for end := 1; end <= len(s); end++ {
		best[end] = best[end-1]
		for start := max(0, end-maxWord); start <= end-4; start++ {
			if n := best[start] + end - start; n > best[end] && isWord(s[start:end]) {
				best[end] = n
			}
		}
	}
	return best[len(s)]
}
