package vlogs

import (
	"strconv"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/search"
)

// LogsQL rendering. VictoriaLogs splits text into words of letters,
// digits and '_', and matches words case-sensitively, where Vigil splits
// at everything but letters and digits and ignores case (search.Tokens).
// So each entry carries, besides the raw line (_msg), its search text:
// field w, Vigil's tokens of the raw line joined by single spaces. In w
// a VictoriaLogs word is exactly a Vigil token, and a Vigil query becomes
// word, phrase and prefix filters on w with the same meaning. Every
// token is letters and digits only and is written quoted, and the source
// is quoted too, so nothing of a user's text is ever read as LogsQL; the
// tenant is never in the query at all (request headers).

// searchField holds the search text of an entry.
const searchField = "w"

// Entries' _time lies in [minTime, maxTime]. VictoriaLogs keeps at most
// 100 years (-retentionPeriod=100y) and -futureRetention ahead, and
// places a time before 1970 in the partition of the day after; Vigil
// takes timestamps in [1900, 2200). An artifact stamped at or outside
// these bounds has _time at the bound and its exact time in field ts,
// written so that its text sorts as the times do.
var (
	minTime = time.Date(1970, 1, 2, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(2120, 1, 1, 0, 0, 0, 0, time.UTC)
)

// tsLayout writes a clamped artifact's exact time: fixed width, so that
// its text sorts as the times do.
const tsLayout = "2006-01-02T15:04:05.000000000Z"

// entryTime returns the _time of an artifact stamped t, and its exact
// time when _time is not t.
func entryTime(t time.Time) (time.Time, string) {
	switch {
	case !t.After(minTime):
		return minTime, t.UTC().Format(tsLayout)
	case !t.Before(maxTime):
		return maxTime, t.UTC().Format(tsLayout)
	}
	return t, ""
}

// quote writes s as a LogsQL quoted string.
func quote(s string) string { return strconv.Quote(s) }

// rfc writes a _time filter bound.
func rfc(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// queryFilter renders q as a LogsQL filter on the search text; "" when q
// is empty. Alternatives are ORed, the terms of one ANDed (juxtaposed),
// and each excluded term is a NOT that applies to every alternative.
// Entries stamped from keysFrom on hold their address keys (entry.go);
// the zero time says every entry does.
func queryFilter(q *search.Query, keysFrom time.Time) string {
	var b strings.Builder
	if len(q.Any) > 0 {
		b.WriteByte('(')
		for i, g := range q.Any {
			if i > 0 {
				b.WriteString(" or ")
			}
			b.WriteByte('(')
			for j, t := range g {
				if j > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(termFilter(t, keysFrom))
			}
			b.WriteByte(')')
		}
		b.WriteByte(')')
	}
	for _, t := range q.Not {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("!" + termFilter(t, keysFrom))
	}
	return b.String()
}

// termFilter renders one word, phrase or prefix as a filter on w: a
// quoted phrase matches its words consecutively, at word boundaries, and
// a trailing * lets its last word be a prefix. An address term is its
// key, one word of the address field, which an entry holds exactly when
// its search text holds the phrase (search.AddressKeys); entries stamped
// before keysFrom may have been written without keys and are matched by
// the phrase.
func termFilter(t search.Term, keysFrom time.Time) string {
	if key, ok := t.Address(); ok {
		s := addressField + ":" + quote(strings.ReplaceAll(key, ".", "_"))
		if keysFrom.IsZero() {
			return s
		}
		return "(" + s + " or (_time:[" + rfc(time.Unix(0, 0)) + ", " + rfc(keysFrom) + ") " +
			searchField + ":" + quote(strings.Join(t.Tokens, " ")) + "))"
	}
	s := searchField + ":" + quote(strings.Join(t.Tokens, " "))
	if t.Prefix {
		s += "*"
	}
	return s
}

// timeFilter renders the half-open range r as a filter on _time (and on
// ts for the entries whose _time is a bound); "" when r is open on both
// sides, and ok false when nothing can match.
func timeFilter(r vigil.TimeRange) (filter string, ok bool) {
	if r.Start.IsZero() && r.End.IsZero() {
		return "", true
	}
	if !r.Start.IsZero() && !r.End.IsZero() && !r.Start.Before(r.End) {
		return "", false
	}
	var parts []string
	// Entries stamped strictly between the bounds: _time is exact.
	lo, hi := minTime.Add(1), maxTime
	if !r.Start.IsZero() && r.Start.After(lo) {
		lo = r.Start
	}
	if !r.End.IsZero() && r.End.Before(hi) {
		hi = r.End
	}
	if lo.Before(hi) {
		parts = append(parts, "_time:["+rfc(lo)+", "+rfc(hi)+")")
	}
	// Entries at a bound: their exact time in ts.
	for _, bound := range []time.Time{minTime, maxTime} {
		from, to := r.Start, r.End
		if bound.Equal(minTime) {
			if !from.IsZero() && from.After(minTime) {
				continue
			}
			if to.IsZero() || to.After(minTime) {
				to = minTime.Add(1)
			}
		} else {
			if !to.IsZero() && to.Before(maxTime) {
				continue
			}
			if from.IsZero() || from.Before(maxTime) {
				from = maxTime
			}
		}
		a, z := "", "~"
		if !from.IsZero() {
			a = from.UTC().Format(tsLayout)
		}
		if !to.IsZero() {
			z = to.UTC().Format(tsLayout)
		}
		parts = append(parts, "(_time:["+rfc(bound)+", "+rfc(bound)+"] ts:string_range("+quote(a)+", "+quote(z)+"))")
	}
	if len(parts) == 0 {
		return "", false
	}
	if len(parts) == 1 {
		return parts[0], true
	}
	return "(" + strings.Join(parts, " or ") + ")", true
}

// idsFilter matches the entries of ids: by their letters (i), and as
// they are (id), which entries written before hold.
func idsFilter(ids []string) string {
	var letters []byte
	for _, id := range ids {
		if isUUID(id) {
			if len(letters) > 0 {
				letters = append(letters, ',')
			}
			letters = append(letters, '"')
			letters = appendIDLetters(letters, id)
			letters = append(letters, '"')
		}
	}
	var b strings.Builder
	b.WriteString("(")
	if len(letters) > 0 {
		b.WriteString(idField + ":in(" + string(letters) + ") or ")
	}
	b.WriteString("id:in(")
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quote(id))
	}
	b.WriteString("))")
	return b.String()
}

// orderPage sorts newest first by timestamp, ties by id descending, and
// keeps the page p. Ties are sorted on i, the id in letters, whose order
// is the ids' byte order (fields.go); entries written before hold their
// id as it is, which idLetterPipes write into i the same way.
func orderPage(p vigil.Page) string {
	limit := p.Limit
	if limit <= 0 {
		limit = vigil.DefaultLimit
	}
	return idLetterPipes + " | sort by (_time desc, ts desc, " + idField + " desc) offset " + strconv.Itoa(max(p.Offset, 0)) + " limit " + strconv.Itoa(limit)
}

// idLetterPipes write the id of an entry that holds it as it is into i,
// without dashes and with digits 0…9 written A…J; they leave the others
// as they are (no dashes or digits in their i).
var idLetterPipes = func() string {
	s := ` | format if (id:*) "<id>" as ` + idField + ` | replace ("-", "") at ` + idField
	for d := '0'; d <= '9'; d++ {
		s += " | replace (" + quote(string(d)) + ", " + quote(string('A'+d-'0')) + ") at " + idField
	}
	return s
}()

// deletePipe drops what reads do not use: the preview, the search text,
// the address keys and the stream bucket.
const deletePipe = " | delete p, " + searchField + ", " + addressField + ", " + streamField
