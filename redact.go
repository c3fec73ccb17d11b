package vigil

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Redacted replaces a credential in what Vigil logs or shows.
const Redacted = "****"

// RedactURL returns u as a log may show it: with its user info and the
// values of its query replaced by Redacted. Both places carry credentials
// in the URLs Vigil is given (nats://TOKEN@host, nats://user:pass@host,
// https://feeds.example/list?key=…), and url.URL.Redacted hides only a
// password. u is not parsed as a URL: a password may hold an unescaped
// '@', '/' or '?' that a parser would misplace, so everything before the
// last '@' counts as user info, which at worst hides more than it must.
func RedactURL(u string) string {
	var b strings.Builder
	rest := u
	if i := strings.Index(rest, "://"); i >= 0 {
		b.WriteString(rest[:i+3])
		rest = rest[i+3:]
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		b.WriteString(Redacted + "@")
		rest = rest[at+1:]
	}
	rest, frag, hasFrag := strings.Cut(rest, "#")
	path, query, hasQuery := strings.Cut(rest, "?")
	b.WriteString(path)
	if hasQuery {
		b.WriteByte('?')
		for i, kv := range strings.Split(query, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			if k, _, ok := strings.Cut(kv, "="); ok {
				b.WriteString(k + "=" + Redacted)
			} else if kv != "" {
				b.WriteString(Redacted) // a bare key may be the credential itself
			}
		}
	}
	if hasFrag && frag != "" {
		b.WriteString("#" + Redacted)
	}
	return b.String()
}

// RedactURLError returns err for a log, with the URL that net/http and
// net/url put in their errors (which hides a password only) as RedactURL
// shows it. The result unwraps to err.
func RedactURLError(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) || ue.URL == "" {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), ue.URL, RedactURL(ue.URL)), err: err}
}

// CheckUserInfo returns an error, which does not show u, when the user
// info of the URL u (what precedes its last '@') holds a byte of cut. A
// parser ends the user info at such a byte (net/url at '/', '?' or '#',
// pgx and libpq at the first '@' or '/'), and the rest of a password
// becomes a host name, a port or a database name, which the parser's and
// the dialer's errors print. u without "://" is taken as what follows it.
func CheckUserInfo(u, cut string) error {
	if _, rest, ok := strings.Cut(u, "://"); ok {
		u = rest
	}
	at := strings.LastIndexByte(u, '@')
	if at < 0 || !strings.ContainsAny(u[:at], cut) {
		return nil
	}
	var chars, codes []string
	for _, c := range cut {
		chars = append(chars, fmt.Sprintf("'%c'", c))
		codes = append(codes, fmt.Sprintf("'%c' as %%%02X", c, c))
	}
	return fmt.Errorf("the URL cannot be read for certain: what precedes its last '@' holds %s, where a parser ends "+
		"the user info, so part of a password would be taken for a host or a path; percent-encode them in the user name "+
		"and password (%s), and '@' in parameter values (the URL is not shown: it may hold a password)",
		strings.Join(chars, ", "), strings.Join(codes, ", "))
}

// ScrubError returns err with every secret (of at least MinScrubbed bytes)
// that its message holds replaced by Redacted. The result unwraps to err.
// Secrets shorter than MinScrubbed are left: hiding every "a" of a message
// would make it unreadable, and such a secret keeps nothing secret.
func ScrubError(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	long := slices.SortedFunc(slices.Values(secrets), func(a, b string) int { return len(b) - len(a) })
	for _, s := range long {
		if len(s) >= MinScrubbed {
			msg = strings.ReplaceAll(msg, s, Redacted)
		}
	}
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// MinScrubbed is the length under which ScrubError leaves a secret.
const MinScrubbed = 3

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
