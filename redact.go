package vigil

import (
	"errors"
	"net/url"
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

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
