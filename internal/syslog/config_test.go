package syslog

import (
	"strings"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		name, url string
		want      Config
		err       string // a part of the error; "" for none
	}{
		{name: "udp", url: "udp://0.0.0.0:5514?org=acme",
			want: Config{Name: "udp://0.0.0.0:5514", Network: "udp", Addr: "0.0.0.0:5514", Org: "acme", DefaultSource: "syslog", MaxMessage: 64 << 10}},
		{name: "tcp with everything", url: "tcp://127.0.0.1:601?org=acme&name=edge&source=auth&default-source=misc&max-message=128KiB&max-connections=10&idle-timeout=30s&first-byte-timeout=5s",
			want: Config{Name: "edge", Network: "tcp", Addr: "127.0.0.1:601", Org: "acme", Source: "auth", DefaultSource: "misc",
				MaxMessage: 128 << 10, MaxConnections: 10, IdleTimeout: 30 * time.Second, FirstByteTimeout: 5 * time.Second}},
		{name: "tcp defaults", url: "tcp://[::]:601?org=acme",
			want: Config{Name: "tcp://[::]:601", Network: "tcp", Addr: "[::]:601", Org: "acme", DefaultSource: "syslog",
				MaxMessage: 64 << 10, MaxConnections: 1000, IdleTimeout: 5 * time.Minute, FirstByteTimeout: 30 * time.Second}},
		{name: "tls mutual, org from the certificate", url: "tls://:6514?cert=c.pem&key=k.pem&client-ca=ca.pem&org-from=o",
			want: Config{Name: "tls://:6514", Network: "tls", Addr: ":6514", DefaultSource: "syslog", MaxMessage: 64 << 10,
				MaxConnections: 1000, IdleTimeout: 5 * time.Minute, FirstByteTimeout: 30 * time.Second, CertFile: "c.pem", KeyFile: "k.pem", ClientCA: "ca.pem", OrgFrom: "o"}},
		{name: "no org", url: "tcp://:601", err: "org is required"},
		{name: "no port", url: "tcp://localhost?org=a", err: "needs a port"},
		{name: "bad scheme", url: "http://:601?org=a", err: "want udp://"},
		{name: "path", url: "tcp://:601/x?org=a", err: "nothing else"},
		{name: "unknown parameter", url: "tcp://:601?org=a&colour=red", err: `unknown parameter "colour"`},
		{name: "tls parameter on tcp", url: "tcp://:601?org=a&cert=c", err: `"cert" is for tls listeners only`},
		{name: "connections on udp", url: "udp://:514?org=a&max-connections=3", err: "for tcp tls listeners only"},
		{name: "first-byte timeout on udp", url: "udp://:514?org=a&first-byte-timeout=3s", err: "for tcp tls listeners only"},
		{name: "bad first-byte timeout", url: "tcp://:601?org=a&first-byte-timeout=soon", err: "first-byte-timeout"},
		{name: "tls without key", url: "tls://:6514?org=a&cert=c", err: "needs cert and key"},
		{name: "org-from without client-ca", url: "tls://:6514?cert=c&key=k&org-from=cn", err: "org-from needs client-ca"},
		{name: "bad org-from", url: "tls://:6514?org=a&cert=c&key=k&client-ca=x&org-from=email", err: "want cn, o or ou"},
		{name: "bad source", url: "tcp://:601?org=a&source=Auth!", err: "source"},
		{name: "message too large", url: "tcp://:601?org=a&max-message=2MiB", err: "max-message"},
		{name: "message too small", url: "tcp://:601?org=a&max-message=10", err: "max-message"},
		{name: "repeated", url: "tcp://:601?org=a&org=b", err: "given 2 times"},
		{name: "org with a blank", url: "tcp://:601?org=acme%20corp", err: "org must be"},
		{name: "org with a slash", url: "tcp://:601?org=acme/eu", err: "org must be"},
		{name: "org of 129 bytes", url: "tcp://:601?org=" + strings.Repeat("o", 129), err: "org must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseURL(tt.url)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestCheckNames(t *testing.T) {
	a, _ := ParseURL("tcp://:0?org=a")
	b, _ := ParseURL("tcp://:0?org=b")
	if err := CheckNames([]Config{a, b}); err == nil || !strings.Contains(err.Error(), "name=") {
		t.Errorf("two listeners of one name: %v", err)
	}
}
