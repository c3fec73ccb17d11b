package webhook

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func TestCheckURL(t *testing.T) {
	def := Policy{}
	op := Policy{AllowHTTPHosts: []string{"receiver.internal", "127.0.0.1"},
		AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.1.0.0/16")}}
	tests := []struct {
		name   string
		p      Policy
		url    string
		refuse string // "" accepted; else a piece of the issue
	}{
		{"https public address", def, "https://203.0.113.10/hook", ""},
		{"https with port and query", def, "https://203.0.113.10:8443/hook?token=abc", ""},
		{"empty", def, "", "is required"},
		{"too long", def, "https://203.0.113.10/" + strings.Repeat("a", vigil.MaxWebhookURLLen), "at most"},
		{"relative", def, "/hook", "absolute"},
		{"no host", def, "https:///hook", "absolute"},
		{"ftp", def, "ftp://203.0.113.10/", "https"},
		{"javascript", def, "javascript:alert(1)", "absolute"},
		{"http by default", def, "http://203.0.113.10/hook", "--webhook-allow-http-hosts"},
		{"http to an allowed host", op, "http://receiver.internal/hook", ""},
		{"http to a host not allowed", op, "http://other.example/hook", "--webhook-allow-http-hosts"},
		{"user info", def, "https://user:pass@203.0.113.10/", "user name or password"},
		{"fragment", def, "https://203.0.113.10/#x", "fragment"},
		{"space", def, "https://203.0.113.10/a b", "spaces"},
		{"control character", def, "https://203.0.113.10/a\x00", "control"},
		{"bad port", def, "https://203.0.113.10:99999/", "port"},
		{"loopback", def, "https://127.0.0.1/", "loopback"},
		{"loopback, other form", def, "https://127.1.2.3:8080/", "loopback"},
		{"IPv6 loopback", def, "https://[::1]/", "loopback"},
		{"IPv4-mapped loopback", def, "https://[::ffff:127.0.0.1]/", "loopback"},
		{"localhost", def, "https://localhost/", "loopback"},
		{"a name under localhost", def, "https://a.localhost:9000/", "loopback"},
		{"unspecified", def, "https://0.0.0.0/", "this network"},
		{"AWS metadata", def, "https://169.254.169.254/latest/meta-data/", "link-local"},
		{"AWS metadata over IPv6", def, "https://[fd00:ec2::254]/", "unique local"},
		{"private 10/8", def, "https://10.0.0.5/", "private"},
		{"private 172.16/12", def, "https://172.20.1.1/", "private"},
		{"private 192.168/16", def, "https://192.168.1.1/", "private"},
		{"shared address space (Alibaba metadata)", def, "https://100.100.100.200/", "shared address space"},
		{"IPv6 link-local", def, "https://[fe80::1]/", "link-local"},
		{"IPv6 link-local with a zone", def, "https://[fe80::1%25eth0]/", "link-local"},
		{"NAT64 of a private address", def, "https://[64:ff9b::a00:1]/", "NAT64"},
		{"multicast", def, "https://224.0.0.1/", "multicast"},
		// What resolvers, dialers and browsers read as an address,
		// although netip.ParseAddr does not.
		{"localhost with a trailing dot", def, "https://localhost./", "loopback"},
		{"localhost with two trailing dots", def, "https://localhost../", "loopback"},
		{"an address with a trailing dot", def, "https://127.0.0.1./", "loopback"},
		{"short dotted loopback", def, "https://127.1/", "loopback"},
		{"short dotted, three parts", def, "https://10.1.5/", "private"},
		{"decimal loopback", def, "https://2130706433/", "loopback"},
		{"hexadecimal loopback", def, "https://0x7f000001/", "loopback"},
		{"hexadecimal, upper case", def, "https://0X7F000001/", "loopback"},
		{"octal loopback", def, "https://0177.0.0.1/", "loopback"},
		{"mixed bases", def, "https://0x7f.0.1/", "loopback"},
		{"zero", def, "https://0/", "this network"},
		{"decimal metadata", def, "https://2852039166/", "link-local"},
		{"IPv4-compatible loopback", def, "https://[::127.0.0.1]/", "loopback"},
		{"IPv4-translated loopback", def, "https://[::ffff:0:7f00:1]/", "loopback"},
		{"IPv4-compatible metadata", def, "https://[::a9fe:a9fe]/", "link-local"},
		{"ends in a number, no address", def, "https://1.2.3.4.5/", "not an IP address"},
		{"a byte too large", def, "https://256.1.1.1/", "not an IP address"},
		{"decimal too large", def, "https://4294967296/", "not an IP address"},
		{"bad octal", def, "https://08.1.1.1/", "not an IP address"},
		{"decimal public address", def, "https://3405803786/hook", ""},
		{"short dotted public address", def, "https://203.10/hook", ""},
		{"public address with a trailing dot", def, "https://203.0.113.10./hook", ""},
		{"IPv6 public address", def, "https://[2001:db8::10]/hook", ""},
		{"a name with digits", def, "https://hooks-2.203.example/x", ""},
		{"a label of hexadecimal letters", def, "https://cafe.example/x", ""},
		{"short dotted loopback allowed by the operator", op, "https://127.1:9000/", ""},
		{"IPv4-compatible loopback allowed by the operator", op, "https://[::127.0.0.1]:9000/", ""},
		{"loopback allowed by the operator", op, "https://127.0.0.1:9000/", ""},
		{"http to an allowed loopback", op, "http://127.0.0.1:9000/hook", ""},
		{"localhost allowed by the operator", op, "https://localhost:9000/", ""},
		{"an allowed network", op, "https://10.1.2.3/", ""},
		{"next to an allowed network", op, "https://10.2.0.1/", "private"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.CheckURL(context.Background(), tt.url)
			if tt.refuse == "" {
				if err != nil {
					t.Fatalf("CheckURL(%q) = %v, want it accepted", tt.url, err)
				}
				return
			}
			var ve *vigil.Error
			if err == nil || vigil.ErrorCode(err) != vigil.EINVALID {
				t.Fatalf("CheckURL(%q) = %v, want a 400", tt.url, err)
			}
			ve = err.(*vigil.Error)
			if len(ve.Details) != 1 || ve.Details[0].Field != "url" || !strings.Contains(ve.Details[0].Issue, tt.refuse) {
				t.Errorf("CheckURL(%q) = %+v, want field url with %q", tt.url, ve.Details, tt.refuse)
			}
		})
	}
}

// TestDialRefusesAtConnect: the client's dialer refuses a refused address
// whatever the URL said (a name resolved at connect time), and connects
// to one the operator allowed.
func TestDialRefusesAtConnect(t *testing.T) {
	for _, tt := range []struct {
		addr   string
		p      Policy
		refuse bool
	}{
		{"127.0.0.1:80", Policy{}, true},
		{"[::1]:80", Policy{}, true},
		{"169.254.169.254:80", Policy{}, true},
		{"[fd00:ec2::254]:80", Policy{}, true},
		{"[fe80::1%eth0]:80", Policy{}, true},
		{"10.0.0.1:443", Policy{}, true},
		{"203.0.113.10:443", Policy{}, false},
		{"127.0.0.1:80", Policy{AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, false},
	} {
		err := tt.p.control("tcp", tt.addr, nil)
		if (err != nil) != tt.refuse {
			t.Errorf("control(%s) with %+v = %v, want refused %v", tt.addr, tt.p, err, tt.refuse)
		}
	}
}

func TestParseNetworks(t *testing.T) {
	got, err := ParseNetworks([]string{"127.0.0.0/8", " 10.1.2.3 ", "", "fd00::/8", "10.9.9.9/16"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.0/8", "10.1.2.3/32", "fd00::/8", "10.9.0.0/16"}
	if len(got) != len(want) {
		t.Fatalf("ParseNetworks = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("ParseNetworks[%d] = %s, want %s", i, got[i], want[i])
		}
	}
	if _, err := ParseNetworks([]string{"not-a-network"}); err == nil {
		t.Error("ParseNetworks took a bad network")
	}
}

func TestSignVerify(t *testing.T) {
	body := []byte(`{"id":"d1","type":"incident.created"}`)
	now := time.Unix(1_800_000_000, 0)
	h := http.Header{}
	h.Set(HeaderTimestamp, "1800000000")
	h.Set(HeaderSignature, Sign("whsec_abc", now.Unix(), body))
	// The documented scheme, computed by openssl for this input (the
	// shell snippet of docs/events.md):
	// printf '1800000000.{"id":"d1","type":"incident.created"}' | openssl dgst -sha256 -hmac whsec_abc
	if got := h.Get(HeaderSignature); got != "v1=007812810601b2629c5bb7fc63a5e483417316ae39c34540055bc78ab74d12b0" {
		t.Errorf("signature %q, want openssl's", got)
	}
	if err := Verify("whsec_abc", h, body, 5*time.Minute, now); err != nil {
		t.Errorf("Verify of a good delivery: %v", err)
	}
	for name, check := range map[string]func() error{
		"another secret": func() error { return Verify("whsec_abd", h, body, 5*time.Minute, now) },
		"another body":   func() error { return Verify("whsec_abc", h, append(body, ' '), 5*time.Minute, now) },
		"too old":        func() error { return Verify("whsec_abc", h, body, 5*time.Minute, now.Add(6*time.Minute)) },
	} {
		if check() == nil {
			t.Errorf("Verify took a delivery with %s", name)
		}
	}
}

func TestBackoff(t *testing.T) {
	s := New(Config{RetryBase: 10 * time.Second, RetryMax: time.Hour})
	for _, tt := range []struct {
		attempts int
		full     time.Duration
	}{{1, 10 * time.Second}, {2, 20 * time.Second}, {3, 40 * time.Second}, {9, 2560 * time.Second}, {10, time.Hour}, {40, time.Hour}} {
		for range 50 {
			d := s.backoff(tt.attempts)
			if d < tt.full/2 || d > tt.full {
				t.Fatalf("backoff(%d) = %s, want within [%s, %s]", tt.attempts, d, tt.full/2, tt.full)
			}
		}
	}
}

// FuzzCheckURL: CheckURL never panics, refuses only with a 400 naming
// url, and what it accepts is https:// (or http:// to an allowed host)
// with no refused address literal.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://203.0.113.10/hook", "http://127.0.0.1:9/", "https://[::ffff:169.254.169.254]/",
		"https://localhost./", "HTTPS://203.0.113.10", "https://203.0.113.10:0/", "https://%31%32%37.0.0.1/", "https://[fe80::1%25eth0]/"} {
		f.Add(s)
	}
	p := Policy{AllowHTTPHosts: []string{"receiver.internal"}}
	f.Fuzz(func(t *testing.T, raw string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond) // no real resolving
		defer cancel()
		err := p.CheckURL(ctx, raw)
		if err != nil {
			ve, ok := err.(*vigil.Error)
			if !ok || ve.Code != vigil.EINVALID || len(ve.Details) == 0 || ve.Details[0].Field != "url" {
				t.Fatalf("CheckURL(%q) = %v, want a 400 naming url", raw, err)
			}
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil {
			t.Fatalf("CheckURL accepted %q, which does not parse: %v", raw, perr)
		}
		if u.Scheme != "https" && !(u.Scheme == "http" && strings.EqualFold(u.Hostname(), "receiver.internal")) {
			t.Fatalf("CheckURL accepted scheme %q of %q", u.Scheme, raw)
		}
		if ip, err := netip.ParseAddr(u.Hostname()); err == nil && p.CheckAddr(ip) != nil {
			t.Fatalf("CheckURL accepted the refused address of %q", raw)
		}
	})
}
