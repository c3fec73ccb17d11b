package queue

import (
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
