package postgres

import (
	"net/url"
	"strings"

	"github.com/vigil-soc/vigil"
)

// shownParams are the connection parameters whose values a log may show:
// where the database is and how Vigil talks to it. Every other value is
// hidden: password and sslpassword, and any parameter pgx does not know,
// which it passes to the server as a run-time setting and which may be
// anything.
var shownParams = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "database": true, "user": true,
	"sslmode": true, "sslrootcert": true, "sslcert": true, "sslkey": true, "sslnegotiation": true, "sslsni": true,
	"channel_binding": true, "gssencmode": true, "krbsrvname": true, "service": true, "servicefile": true, "passfile": true,
	"connect_timeout": true, "application_name": true, "target_session_attrs": true, "load_balance_hosts": true,
	"search_path": true, "default_query_exec_mode": true, "statement_cache_capacity": true, "description_cache_capacity": true,
	"pool_max_conns": true, "pool_min_conns": true, "pool_min_idle_conns": true, "pool_max_conn_lifetime": true,
	"pool_max_conn_lifetime_jitter": true, "pool_max_conn_idle_time": true, "pool_health_check_period": true,
}

// RedactURL returns a connection string, in either form pgx accepts, as a
// log may show it: the password of a URL's user info and the value of
// every parameter but those in shownParams replaced by vigil.Redacted.
//
//	postgres://vigil:s3cret@pg-1/vigil?sslmode=require&password=x → postgres://vigil:****@pg-1/vigil?sslmode=require&password=****
//	host=pg-1 user=vigil password='s 3' → host=pg-1 user=vigil password=****
//
// What it cannot read with certainty (an '@', '/' or '?' unescaped in a
// password, an unterminated quote) it hides whole.
func RedactURL(s string) string {
	return redact(s, func(string) {})
}

// secrets returns what RedactURL hides in the connection string s, as
// written and as pgx decodes it: what an error may show.
func secrets(s string) []string {
	var out []string
	redact(s, func(v string) {
		out = append(out, v)
		if d, err := url.PathUnescape(v); err == nil && d != v {
			out = append(out, d)
		}
		if u := unquote(v); u != v {
			out = append(out, u)
		}
	})
	return out
}

// unquote is a keyword/value form's value as pgx reads it: without its
// single quotes and with its backslash escapes resolved.
func unquote(v string) string {
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		v = v[1 : len(v)-1]
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// redact is RedactURL, calling hide with each value it hides.
func redact(s string, hide func(string)) string {
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		return scheme + "://" + redactURI(rest, hide)
	}
	return redactKeywordValue(s, hide)
}

// redactURI redacts what follows postgres://.
func redactURI(rest string, hide func(string)) string {
	var b strings.Builder
	// A password may hold '@': the user info ends at the last one. Should
	// what precedes it hold a '/' or '?' too, it is not only user info (an
	// unescaped password character, or an '@' in a query value) and is
	// hidden whole.
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		info := rest[:at]
		user, password, hasPassword := strings.Cut(info, ":")
		switch {
		case strings.ContainsAny(info, "/?#"):
			hide(info)
			b.WriteString(vigil.Redacted)
		case hasPassword:
			hide(password)
			b.WriteString(user + ":" + vigil.Redacted)
		default:
			b.WriteString(user)
		}
		b.WriteByte('@')
		rest = rest[at+1:]
	}
	rest, frag, hasFrag := strings.Cut(rest, "#")
	where, query, hasQuery := strings.Cut(rest, "?")
	b.WriteString(where)
	if hasQuery {
		b.WriteByte('?')
		for i, kv := range strings.Split(query, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			k, v, hasValue := strings.Cut(kv, "=")
			name, err := url.QueryUnescape(k)
			switch {
			case hasValue && err == nil && shownParams[name]:
				b.WriteString(kv)
			case hasValue:
				hide(v)
				b.WriteString(k + "=" + vigil.Redacted)
			case kv != "":
				hide(kv)
				b.WriteString(vigil.Redacted)
			}
		}
	}
	if hasFrag && frag != "" {
		hide(frag)
		b.WriteString("#" + vigil.Redacted)
	}
	return b.String()
}

// redactKeywordValue redacts the keyword/value form (host=pg-1 password=…),
// read as pgx reads it: keyword = value, blanks around '=' allowed, a value
// either a run of non-blanks or single-quoted, with backslash escapes in
// both.
func redactKeywordValue(s string, hide func(string)) string {
	const blanks = " \t\n\r\v\f"
	var b strings.Builder
	s = strings.TrimLeft(s, blanks)
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			hide(s)
			b.WriteString(vigil.Redacted) // not keyword/value: may be anything
			break
		}
		key := strings.Trim(s[:eq], blanks)
		s = strings.TrimLeft(s[eq+1:], blanks)
		end, ok := 0, true
		if s != "" && s[0] == '\'' {
			end = 1
			for ; end < len(s) && s[end] != '\''; end++ {
				if s[end] == '\\' {
					end++
				}
			}
			if end >= len(s) {
				ok = false // unterminated quote: the rest is its value
				end = len(s)
			} else {
				end++ // the closing quote
			}
		} else {
			for ; end < len(s) && !strings.ContainsRune(blanks, rune(s[end])); end++ {
				if s[end] == '\\' {
					end++
				}
			}
			end = min(end, len(s))
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		switch {
		case !keyword(key):
			// Not a keyword pgx would take (a stray word before it, a
			// quote gone wrong): it may be part of a value.
			hide(key)
			hide(s[:end])
			b.WriteString(vigil.Redacted)
		case ok && shownParams[key]:
			b.WriteString(key + "=" + s[:end])
		default:
			hide(s[:end])
			b.WriteString(key + "=" + vigil.Redacted)
		}
		s = strings.TrimLeft(s[end:], blanks)
	}
	return b.String()
}

// keyword reports whether k looks like a connection parameter's name.
func keyword(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
