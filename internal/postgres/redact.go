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
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		return scheme + "://" + redactURI(rest)
	}
	return redactKeywordValue(s)
}

// redactURI redacts what follows postgres://.
func redactURI(rest string) string {
	var b strings.Builder
	// A password may hold '@': the user info ends at the last one. Should
	// what precedes it hold a '/' or '?' too, it is not only user info (an
	// unescaped password character, or an '@' in a query value) and is
	// hidden whole.
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		info := rest[:at]
		user, _, hasPassword := strings.Cut(info, ":")
		switch {
		case strings.ContainsAny(info, "/?#"):
			b.WriteString(vigil.Redacted)
		case hasPassword:
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
			k, _, hasValue := strings.Cut(kv, "=")
			name, err := url.QueryUnescape(k)
			switch {
			case hasValue && err == nil && shownParams[name]:
				b.WriteString(kv)
			case hasValue:
				b.WriteString(k + "=" + vigil.Redacted)
			case kv != "":
				b.WriteString(vigil.Redacted)
			}
		}
	}
	if hasFrag && frag != "" {
		b.WriteString("#" + vigil.Redacted)
	}
	return b.String()
}

// redactKeywordValue redacts the keyword/value form (host=pg-1 password=…),
// read as pgx reads it: keyword = value, blanks around '=' allowed, a value
// either a run of non-blanks or single-quoted, with backslash escapes in
// both.
func redactKeywordValue(s string) string {
	const blanks = " \t\n\r\v\f"
	var b strings.Builder
	s = strings.TrimLeft(s, blanks)
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
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
			b.WriteString(vigil.Redacted)
		case ok && shownParams[key]:
			b.WriteString(key + "=" + s[:end])
		default:
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
