package queue

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/vigil-soc/vigil"
)

// RedactURL returns a --nats-url as a log may show it. The NATS client
// takes a comma-separated list of servers, and each may carry a user and
// password or a token as its user name alone (nats://TOKEN@host), so the
// user info of every one is hidden whole.
func RedactURL(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		parts[i] = vigil.RedactURL(strings.TrimSpace(p))
	}
	return strings.Join(parts, ",")
}

// checkURLs refuses a --nats-url list that the NATS client would misread
// or whose parse error would print it: a password holding an unescaped
// '/', '?' or '#' (net/url ends the host there, and the rest of the
// password becomes a host to look up or a path), or a URL that does not
// parse (net/url's error quotes the URL whole). The error shows the URL
// as RedactURL does, or not at all.
func checkURLs(urls string) error {
	for _, p := range strings.Split(urls, ",") {
		p = strings.TrimSpace(p)
		if err := vigil.CheckUserInfo(p, "/?#"); err != nil {
			return fmt.Errorf("NATS URL: %w", err)
		}
		u := p
		if !strings.Contains(u, "://") {
			u = "nats://" + u // as the NATS client reads it
		}
		if _, err := url.Parse(u); err != nil {
			return fmt.Errorf("NATS URL %s is not a URL: percent-encode '%%' and the reserved characters of its user name and password", vigil.RedactURL(p))
		}
	}
	return nil
}

// secrets returns the user info of each URL of a --nats-url list (a
// token, or a user and a password), whole and in parts, as written and
// decoded: what an error may show.
func secrets(urls string) []string {
	var out []string
	for _, p := range strings.Split(urls, ",") {
		if _, rest, ok := strings.Cut(p, "://"); ok {
			p = rest
		}
		at := strings.LastIndexByte(p, '@')
		if at < 0 {
			continue
		}
		info := p[:at]
		user, password, _ := strings.Cut(info, ":")
		for _, s := range []string{info, user, password} {
			out = append(out, s)
			if d, err := url.PathUnescape(s); err == nil && d != s {
				out = append(out, d)
			}
		}
	}
	return out
}
