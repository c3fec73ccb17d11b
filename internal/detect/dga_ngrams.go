package detect

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"io"
	"sync"
)

// dgaNgramsGz holds the letter-trigram models of dgaScore, one per
// language of ngramLangs, counted over the word lists Debian's packages
// ship (SCOWL's American English as wamerican has it, the w* lists and
// hunspell dictionaries of the others, Japanese readings of SKK's
// dictionary in romaji, Chinese words of pyim's in pinyin), written in
// ASCII letters as web addresses spell them (Cyrillic transliterated:
// одноклассники → odnoklassniki). gen_ngrams.go made it and says how
// (go run gen_ngrams.go). Each model is 27 × 27 × 27 log2 probabilities
// in quarter bits: P(next | two before), the context in "^a…z" ("^":
// before the label), the next in "a…z$" ("$": its end).
//
//go:embed dga_ngrams.bin.gz
var dgaNgramsGz []byte

// ngramLangs are the models' languages, in the file's order: English
// first, then the languages whose names a label may be read in.
var ngramLangs = []string{"en", "de", "fr", "es", "it", "pt", "nl", "pl", "sv", "no", "da", "ca",
	"cs", "tr", "ro", "hu", "id", "ru", "uk", "vi", "zh", "ja"}

const ngramSize = 27 * 27 * 27

var dgaNgrams = sync.OnceValue(func() []int8 {
	zr, err := gzip.NewReader(bytes.NewReader(dgaNgramsGz))
	if err != nil {
		panic("detect: embedded trigram models: " + err.Error())
	}
	b, err := io.ReadAll(zr)
	if err != nil || len(b) != len(ngramLangs)*ngramSize {
		panic("detect: embedded trigram models: not one model per language")
	}
	out := make([]int8, len(b))
	for i, x := range b {
		out[i] = int8(x)
	}
	return out
})

// otherLangPenalty is what reading a label in a language other than
// English costs, in bits per letter: most names are English words or
// made like them, and each more language a label may be read in makes a
// random string likelier to read as one of them.
const otherLangPenalty = 0.5

// trigramScores returns s's mean log2 probability per letter, in bits,
// under the English model and under the best of the others (with
// otherLangPenalty taken off). s is lower-case letters and digits. A
// digit next to a letter or an end costs 6 bits, a digit after a digit
// 3.3 (log2 10); letters after a digit are read as from a label's start.
// English words score about −2.5 to −4, random letters −5.5 to −8.
func trigramScores(s string) (english, other float64) {
	m := dgaNgrams()
	best := -1e9
	for l := range ngramLangs {
		v := trigramScore(m[l*ngramSize:(l+1)*ngramSize], s)
		if l == 0 {
			english = v
		} else if v > best {
			best = v
		}
	}
	return english, best - otherLangPenalty
}

// languageScore is s's score in the language it reads best in
// (trigramScores).
func languageScore(s string) float64 {
	english, other := trigramScores(s)
	return max(english, other)
}

func trigramScore(model []int8, s string) float64 {
	total, n := 0, 0
	a, b := 0, 0 // context letters, 0 for "^"
	prevDigit := false
	for i := 0; i <= len(s); i++ {
		c := byte('$')
		if i < len(s) {
			c = s[i]
		}
		digit := isDigit(c)
		switch {
		case prevDigit && digit:
			total -= 13
		case prevDigit || digit:
			total -= 24
		default:
			next := 26
			if c != '$' {
				next = int(c - 'a')
			}
			total += int(model[(a*27+b)*27+next])
		}
		n++
		prevDigit = digit
		if digit {
			a, b = 0, 0
		} else if c != '$' {
			a, b = b, int(c-'a')+1
		}
	}
	return float64(total) / 4 / float64(n)
}
