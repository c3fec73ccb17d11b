package syslog

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/vigil-soc/vigil"
)

// Defaults of a listener's limits.
const (
	DefaultMaxMessage     = 64 << 10
	DefaultMaxConnections = 1000
	DefaultIdleTimeout    = 5 * time.Minute
	// DefaultFirstByteTimeout is shorter: a sender sends when it connects,
	// a connection that says nothing holds a slot for nothing.
	DefaultFirstByteTimeout = 30 * time.Second
	DefaultSource           = "syslog"
)

// Config is one listener, as given by one --syslog-listen URL:
//
//	udp://0.0.0.0:514?org=acme
//	tcp://0.0.0.0:601?org=acme&default-source=syslog&max-message=128KiB
//	tls://0.0.0.0:6514?org=acme&cert=/etc/vigil/syslog.pem&key=/etc/vigil/syslog.key
//	tls://0.0.0.0:6514?cert=…&key=…&client-ca=/etc/vigil/ca.pem&org-from=o
type Config struct {
	Name    string // label of its metrics and logs; default the URL without its query
	Network string // udp, tcp or tls
	Addr    string // host:port to listen on

	// Org receives every message; with OrgFrom, the org of a client
	// certificate that names none is refused instead.
	Org string
	// Source, when set, is the source of every message; DefaultSource is
	// that of a message whose program names no known source.
	Source        string
	DefaultSource string

	MaxMessage int // bytes; longer messages are cut to it
	// TCP and TLS: open connections; when as many are open, the one silent
	// the longest is evicted for a new one (none that is mid-frame)
	MaxConnections int
	IdleTimeout    time.Duration // TCP and TLS: a connection silent this long is closed; 0: never
	// TCP and TLS: a connection that has sent nothing this long (after its
	// TLS handshake) is closed; 0, or longer than IdleTimeout: IdleTimeout
	FirstByteTimeout time.Duration

	CertFile, KeyFile string // TLS: the server's certificate chain and key (PEM)
	ClientCA          string // TLS: CA bundle (PEM); set, clients must present a certificate it signed
	OrgFrom           string // TLS with ClientCA: cn, o or ou of the client certificate's subject names the org
}

// params are the query parameters a listener URL may have, and for which
// networks.
var params = map[string]string{
	"org": "udp tcp tls", "name": "udp tcp tls", "source": "udp tcp tls", "default-source": "udp tcp tls",
	"max-message": "udp tcp tls", "max-connections": "tcp tls", "idle-timeout": "tcp tls", "first-byte-timeout": "tcp tls",
	"cert": "tls", "key": "tls", "client-ca": "tls", "org-from": "tls",
}

// ParseURL parses one listener URL (see Config) and checks it whole.
func ParseURL(s string) (Config, error) {
	c, err := parseURL(s)
	if err != nil {
		return Config{}, fmt.Errorf("syslog listener %q: %w", s, err)
	}
	return c, nil
}

func parseURL(s string) (Config, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return Config{}, errors.New("not a URL (e.g. tcp://0.0.0.0:5514?org=acme)")
	}
	c := Config{Network: u.Scheme, Addr: u.Host, MaxMessage: DefaultMaxMessage, DefaultSource: DefaultSource}
	switch c.Network {
	case "udp", "tcp", "tls":
	default:
		return Config{}, fmt.Errorf("scheme %q: want udp://, tcp:// or tls://", u.Scheme)
	}
	if u.Path != "" && u.Path != "/" || u.User != nil || u.Fragment != "" {
		return Config{}, errors.New("a listener URL is scheme://host:port?parameters, nothing else")
	}
	if _, port, err := net.SplitHostPort(c.Addr); err != nil || port == "" {
		return Config{}, errors.New("the address needs a port, e.g. tcp://0.0.0.0:5514")
	}
	if c.Network != "udp" {
		c.MaxConnections, c.IdleTimeout, c.FirstByteTimeout = DefaultMaxConnections, DefaultIdleTimeout, DefaultFirstByteTimeout
	}
	c.Name = c.Network + "://" + c.Addr
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return Config{}, fmt.Errorf("parameters: %v", err)
	}
	var errs []error
	for k, vs := range q {
		nets, ok := params[k]
		if !ok {
			errs = append(errs, fmt.Errorf("unknown parameter %q", k))
			continue
		}
		if !strings.Contains(nets, c.Network) {
			errs = append(errs, fmt.Errorf("parameter %q is for %s listeners only", k, nets))
			continue
		}
		if len(vs) != 1 {
			errs = append(errs, fmt.Errorf("parameter %q given %d times", k, len(vs)))
			continue
		}
		if err := c.set(k, vs[0]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	return c, c.check()
}

func (c *Config) set(k, v string) error {
	switch k {
	case "org":
		c.Org = v
	case "name":
		if v == "" {
			return errors.New("must not be empty")
		}
		c.Name = v
	case "source", "default-source":
		if issue := vigil.ValidateSource(v); issue != "" {
			return errors.New(issue)
		}
		if k == "source" {
			c.Source = v
		} else {
			c.DefaultSource = v
		}
	case "max-message":
		n, err := humanize.ParseBytes(v)
		if err != nil || n < 256 || n > vigil.MaxRawBytes {
			return fmt.Errorf("%q: want a size from 256 bytes to 1MiB (e.g. 64KiB)", v)
		}
		c.MaxMessage = int(n)
	case "max-connections":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > math.MaxInt32 {
			return fmt.Errorf("%q: want a positive number", v)
		}
		c.MaxConnections = n
	case "idle-timeout", "first-byte-timeout":
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("%q: want a duration (e.g. 5m; 0: never)", v)
		}
		if k == "idle-timeout" {
			c.IdleTimeout = d
		} else {
			c.FirstByteTimeout = d
		}
	case "cert":
		c.CertFile = v
	case "key":
		c.KeyFile = v
	case "client-ca":
		c.ClientCA = v
	case "org-from":
		if v != "cn" && v != "o" && v != "ou" {
			return fmt.Errorf("%q: want cn, o or ou (of the client certificate's subject)", v)
		}
		c.OrgFrom = v
	}
	return nil
}

// check reports what is missing from a parsed URL.
func (c *Config) check() error {
	var errs []error
	if c.Org == "" && c.OrgFrom == "" {
		errs = append(errs, errors.New("org is required (…?org=<org id>), or org-from with client-ca on tls://"))
	}
	if c.Org != "" && !vigil.ValidOrgID(c.Org) {
		// What no token can name, no one could read.
		errs = append(errs, fmt.Errorf("org must be %s, not %.140q", vigil.OrgIDRule, c.Org))
	}
	if c.Network == "tls" {
		if c.CertFile == "" || c.KeyFile == "" {
			errs = append(errs, errors.New("tls:// needs cert and key (PEM files)"))
		}
		if c.OrgFrom != "" && c.ClientCA == "" {
			errs = append(errs, errors.New("org-from needs client-ca: only a verified client certificate may name the org"))
		}
	}
	return errors.Join(errs...)
}

// CheckNames refuses two listeners of one name: their metrics would mix.
func CheckNames(cfgs []Config) error {
	seen := map[string]bool{}
	for _, c := range cfgs {
		if seen[c.Name] {
			return fmt.Errorf("two syslog listeners named %q: give each a name=", c.Name)
		}
		seen[c.Name] = true
	}
	return nil
}
