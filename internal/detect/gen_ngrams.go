//go:build ignore

// gen_ngrams writes dga_ngrams.bin.gz, the letter-trigram models of
// dgaScore, from the word lists Debian's packages install:
//
//	apt-get install wamerican wngerman wfrench wspanish witalian wportuguese \
//	  wdutch wpolish wswedish wnorwegian wdanish wcatalan hunspell-cs hunspell-tr \
//	  hunspell-ro hunspell-hu hunspell-id hunspell-ru hunspell-uk hunspell-vi \
//	  elpa-pyim-basedict skkdic
//	cd internal/detect && go run gen_ngrams.go
//
// Each language's words are lower-cased and written in ASCII letters:
// accents dropped (é→e, ß→ss, ø→o, ł→l), Russian and Ukrainian Cyrillic
// transliterated as web addresses spell them (одноклассники →
// odnoklassniki), Japanese kana readings in Hepburn romaji (SKK's
// dictionary: しんぶん → shinbun), Chinese words in toneless pinyin
// (pyim's dictionary: a-mi-ba → amiba), Vietnamese syllables joined in
// twos and threes as Vietnamese names join them (doanh+nghiep). Words
// of 3 to 24 letters are kept, at most 60,000 per language (a fixed
// shuffle), and each language's trigram counts (with "^" before a word
// and "$" after it) give P(c | a b) = 0.6 P3 + 0.3 P2 + 0.1 P1, each
// order's estimate (n + 5e-5) / (N + 27 × 5e-5) and 1/27 for a context
// never seen. The file holds, for each language in ngramLangs' order,
// 27 × 27 × 27 log2 probabilities in quarter bits (int8, at least −127):
// context (a, b) in "^a…z", next letter in "a…z$".
package main

import (
	"bytes"
	"compress/gzip"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/unicode/norm"
)

type source struct {
	lang, path string
	read       func(path string) []string
}

// The order is ngramLangs' (dga_ngrams.go): English first.
var sources = []source{
	{"en", "/usr/share/dict/american-english", dictUTF8},
	{"de", "/usr/share/dict/ngerman", dictUTF8},
	{"fr", "/usr/share/dict/french", dictUTF8},
	{"es", "/usr/share/dict/spanish", dictUTF8},
	{"it", "/usr/share/dict/italian", dictUTF8},
	{"pt", "/usr/share/dict/portuguese", dictUTF8},
	{"nl", "/usr/share/dict/dutch", dictUTF8},
	{"pl", "/usr/share/dict/polish", dictUTF8},
	{"sv", "/usr/share/dict/swedish", dictLatin1},
	{"no", "/usr/share/dict/bokmaal", dictLatin1},
	{"da", "/usr/share/dict/danish", dictUTF8},
	{"ca", "/usr/share/dict/catalan", dictUTF8},
	{"cs", "/usr/share/hunspell/cs_CZ.dic", hunspell},
	{"tr", "/usr/share/hunspell/tr_TR.dic", hunspell},
	{"ro", "/usr/share/hunspell/ro_RO.dic", hunspell},
	{"hu", "/usr/share/hunspell/hu_HU.dic", hunspell},
	{"id", "/usr/share/hunspell/id_ID.dic", hunspell},
	{"ru", "/usr/share/hunspell/ru_RU.dic", hunspell},
	{"uk", "/usr/share/hunspell/uk_UA.dic", hunspell},
	{"vi", "/usr/share/hunspell/vi_VN.dic", vietnamese},
	{"zh", "/usr/share/emacs/site-lisp/elpa-src/pyim-basedict-0.5.4/pyim-basedict.pyim", pinyin},
	{"ja", "/usr/share/skk/SKK-JISYO.L", skk},
}

const (
	perLang = 60_000
	add     = 5e-5
)

func main() {
	var out bytes.Buffer
	for _, s := range sources {
		words := keep(s.read(s.path))
		log.Printf("%s: %d words (%s)", s.lang, len(words), strings.Join(words[:8], " "))
		out.Write(table(words))
	}
	f, err := os.Create("dga_ngrams.bin.gz")
	if err != nil {
		log.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	if _, err := zw.Write(out.Bytes()); err != nil {
		log.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	v, _ := exec.Command("dpkg-query", "-W", "wamerican", "wngerman", "wfrench", "wspanish", "witalian", "wportuguese",
		"wdutch", "wpolish", "wswedish", "wnorwegian", "wdanish", "wcatalan", "hunspell-cs", "hunspell-tr", "hunspell-ro",
		"hunspell-hu", "hunspell-id", "hunspell-ru", "hunspell-uk", "hunspell-vi", "elpa-pyim-basedict", "skkdic").Output()
	log.Printf("package versions:\n%s", v)
}

// keep returns the distinct words of 3 to 24 ASCII letters, at most
// perLang of them in a fixed shuffle.
func keep(words []string) []string {
	set := map[string]bool{}
	for _, w := range words {
		if len(w) >= 3 && len(w) <= 24 && strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") == "" {
			set[w] = true
		}
	}
	out := make([]string, 0, len(set))
	for w := range set {
		out = append(out, w)
	}
	slices.Sort(out)
	rand.New(rand.NewPCG(2026, 30)).Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out[:min(len(out), perLang)]
}

// table counts words' trigrams and returns the quantized log2 model.
func table(words []string) []byte {
	const n = 27
	var c3 [n][n][n]float64
	var c2 [n][n]float64
	var c1 [n]float64
	for _, w := range words {
		a, b := 0, 0 // "^^"
		for i := 0; i <= len(w); i++ {
			c := 26 // "$"
			if i < len(w) {
				c = int(w[i] - 'a')
			}
			c3[a][b][c]++
			c2[b][c]++
			c1[c]++
			a, b = b, c+1
		}
	}
	est := func(row []float64, k int) float64 {
		tot := 0.0
		for _, x := range row {
			tot += x
		}
		if tot == 0 {
			return 1.0 / n
		}
		return (row[k] + add) / (tot + n*add)
	}
	out := make([]byte, 0, n*n*n)
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			for c := 0; c < n; c++ {
				p := 0.6*est(c3[a][b][:], c) + 0.3*est(c2[b][:], c) + 0.1*est(c1[:], c)
				q := math.Round(4 * math.Log2(p))
				out = append(out, byte(int8(max(q, -127))))
			}
		}
	}
	return out
}

func lines(path string, dec func([]byte) []byte) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatalf("%s: %v (install its package, see the comment at the top)", path, err)
	}
	if dec != nil {
		b = dec(b)
	}
	return strings.Split(string(b), "\n")
}

func dictUTF8(path string) []string { return words(lines(path, nil)) }

func dictLatin1(path string) []string {
	return words(lines(path, func(b []byte) []byte {
		u, err := charmap.ISO8859_1.NewDecoder().Bytes(b)
		if err != nil {
			log.Fatal(err)
		}
		return u
	}))
}

// hunspell reads a .dic file: a count, then word/FLAGS lines.
func hunspell(path string) []string {
	ls := lines(path, nil)
	for i, l := range ls {
		w, _, _ := strings.Cut(l, "/")
		ls[i] = strings.TrimSpace(w)
	}
	return words(ls[1:])
}

func words(ls []string) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, ascii(strings.TrimSpace(l)))
	}
	return out
}

// vietnamese joins the dictionary's syllables in twos and threes.
func vietnamese(path string) []string {
	syl := slices.DeleteFunc(hunspell(path), func(s string) bool { return s == "" })
	r := rand.New(rand.NewPCG(84, 1))
	out := make([]string, 0, 2*perLang)
	for range 2 * perLang {
		w := syl[r.IntN(len(syl))] + syl[r.IntN(len(syl))]
		if r.IntN(3) == 0 {
			w += syl[r.IntN(len(syl))]
		}
		out = append(out, w)
	}
	return out
}

// pinyin reads pyim's dictionary: "a-mi-ba 阿米巴 …" lines.
func pinyin(path string) []string {
	var out []string
	for _, l := range lines(path, nil) {
		if l == "" || strings.HasPrefix(l, ";") {
			continue
		}
		py, _, _ := strings.Cut(l, " ")
		out = append(out, strings.ReplaceAll(py, "-", ""))
	}
	return out
}

// skk reads SKK's dictionary (EUC-JP): the kana reading before the first
// space, romanized; readings with a trailing okurigana letter lose it.
func skk(path string) []string {
	var out []string
	for _, l := range lines(path, func(b []byte) []byte {
		u, err := japanese.EUCJP.NewDecoder().Bytes(b)
		if err != nil {
			log.Fatal(err)
		}
		return u
	}) {
		if l == "" || strings.HasPrefix(l, ";") {
			continue
		}
		r, _, _ := strings.Cut(l, " ")
		r = strings.TrimRightFunc(r, func(c rune) bool { return c < utf8.RuneSelf })
		if w, ok := romaji(r); ok {
			out = append(out, w)
		}
	}
	return out
}

var kana = map[string]string{
	"あ": "a", "い": "i", "う": "u", "え": "e", "お": "o", "か": "ka", "き": "ki", "く": "ku", "け": "ke", "こ": "ko",
	"さ": "sa", "し": "shi", "す": "su", "せ": "se", "そ": "so", "た": "ta", "ち": "chi", "つ": "tsu", "て": "te", "と": "to",
	"な": "na", "に": "ni", "ぬ": "nu", "ね": "ne", "の": "no", "は": "ha", "ひ": "hi", "ふ": "fu", "へ": "he", "ほ": "ho",
	"ま": "ma", "み": "mi", "む": "mu", "め": "me", "も": "mo", "や": "ya", "ゆ": "yu", "よ": "yo",
	"ら": "ra", "り": "ri", "る": "ru", "れ": "re", "ろ": "ro", "わ": "wa", "ゐ": "i", "ゑ": "e", "を": "o", "ん": "n",
	"が": "ga", "ぎ": "gi", "ぐ": "gu", "げ": "ge", "ご": "go", "ざ": "za", "じ": "ji", "ず": "zu", "ぜ": "ze", "ぞ": "zo",
	"だ": "da", "ぢ": "ji", "づ": "zu", "で": "de", "ど": "do", "ば": "ba", "び": "bi", "ぶ": "bu", "べ": "be", "ぼ": "bo",
	"ぱ": "pa", "ぴ": "pi", "ぷ": "pu", "ぺ": "pe", "ぽ": "po", "ゔ": "vu",
	"ぁ": "a", "ぃ": "i", "ぅ": "u", "ぇ": "e", "ぉ": "o",
}

var smallY = map[string]string{"ゃ": "a", "ゅ": "u", "ょ": "o"}

// romaji writes a hiragana reading in Hepburn romaji: きょう → kyou, しゃ
// → sha, がっこう → gakkou. False for a reading with other characters.
func romaji(s string) (string, bool) {
	rs := []rune(s)
	var b strings.Builder
	double := false
	for i := 0; i < len(rs); i++ {
		k := string(rs[i])
		if k == "っ" {
			double = true
			continue
		}
		if k == "ー" {
			continue
		}
		syl, ok := kana[k]
		if !ok {
			return "", false
		}
		if i+1 < len(rs) {
			if v, ok := smallY[string(rs[i+1])]; ok {
				switch {
				case strings.HasPrefix(syl, "sh"), strings.HasPrefix(syl, "ch"), syl == "ji":
					syl = syl[:len(syl)-1] + v
				default:
					syl = syl[:len(syl)-1] + "y" + v
				}
				i++
			}
		}
		if double {
			if strings.HasPrefix(syl, "ch") {
				b.WriteByte('t')
			} else {
				b.WriteByte(syl[0])
			}
			double = false
		}
		b.WriteString(syl)
	}
	return b.String(), true
}

// cyrillic is how web addresses spell Russian and Ukrainian letters.
var cyrillic = map[rune]string{
	'а': "a", 'б': "b", 'в': "v", 'г': "g", 'д': "d", 'е': "e", 'ё': "e", 'ж': "zh", 'з': "z", 'и': "i", 'й': "y",
	'к': "k", 'л': "l", 'м': "m", 'н': "n", 'о': "o", 'п': "p", 'р': "r", 'с': "s", 'т': "t", 'у': "u", 'ф': "f",
	'х': "kh", 'ц': "ts", 'ч': "ch", 'ш': "sh", 'щ': "shch", 'ъ': "", 'ы': "y", 'ь': "", 'э': "e", 'ю': "yu", 'я': "ya",
	'і': "i", 'ї': "yi", 'є': "ye", 'ґ': "g",
}

var special = map[rune]string{'ß': "ss", 'æ': "ae", 'ø': "o", 'œ': "oe", 'ł': "l", 'đ': "d", 'ð': "d", 'þ': "th", 'ı': "i"}

// ascii lower-cases w and writes it in ASCII letters; other characters
// stay (and the word is then not kept).
func ascii(w string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(w) {
		if s, ok := cyrillic[c]; ok {
			b.WriteString(s)
			continue
		}
		if s, ok := special[c]; ok {
			b.WriteString(s)
			continue
		}
		for _, d := range norm.NFKD.String(string(c)) {
			if !unicode.Is(unicode.Mn, d) {
				b.WriteRune(d)
			}
		}
	}
	return b.String()
}
