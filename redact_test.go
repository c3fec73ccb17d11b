package vigil

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"nats://nats-1:4222", "nats://nats-1:4222"},
		{"nats://TOKEN@nats-1:4222", "nats://****@nats-1:4222"},
		{"nats://user:pa@ss@nats-1:4222", "nats://****@nats-1:4222"},
		{"https://idp.example/jwks?key=K&v=1&bare", "https://idp.example/jwks?key=****&v=****&****"},
		{"https://u:p/w@idp.example/x#frag", "https://****@idp.example/x#****"},
		{"TOKEN@nats-1", "****@nats-1"},
	} {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRedactURLError(t *testing.T) {
	inner := errors.New("connection refused")
	err := &url.Error{Op: "Get", URL: "https://TOKEN@feeds.example/x?key=K", Err: inner}
	got := RedactURLError(err)
	if want := `Get "https://****@feeds.example/x?key=****": connection refused`; got.Error() != want {
		t.Errorf("RedactURLError = %q, want %q", got, want)
	}
	if !errors.Is(got, inner) {
		t.Errorf("RedactURLError does not unwrap to the cause")
	}
	if plain := errors.New("x"); RedactURLError(plain) != plain || RedactURLError(nil) != nil {
		t.Errorf("an error without a URL is changed")
	}
}

func TestCheckUserInfo(t *testing.T) {
	for _, tt := range []struct {
		u, cut string
		bad    bool
	}{
		{"postgres://u:p@h/db", "@/", false},
		{"postgres://u:p%40q%2Fr@h/db", "@/", false},
		{"postgres://h/db?sslmode=disable", "@/", false},
		{"postgres://u:p@q@h/db", "@/", true},
		{"postgres://u:p@q/SEKRIT@h/db", "@/", true},
		{"postgres://u:p/q@h/db", "@/", true},
		{"postgres://u:p@h/db?application_name=a@b", "@/", true},
		{"nats://u:p@q@h:4222", "/?#", false},
		{"nats://u:p/q@h:4222", "/?#", true},
		{"nats://u:p?q@h:4222", "/?#", true},
		{"TOKEN@h:4222", "/?#", false},
	} {
		err := CheckUserInfo(tt.u, tt.cut)
		if (err != nil) != tt.bad {
			t.Errorf("CheckUserInfo(%q, %q) = %v, want refused %v", tt.u, tt.cut, err, tt.bad)
		}
		if err != nil && (strings.Contains(err.Error(), "SEKRIT") || strings.Contains(err.Error(), "u:p")) {
			t.Errorf("CheckUserInfo(%q) shows the URL: %v", tt.u, err)
		}
	}
}

func TestScrubError(t *testing.T) {
	inner := errors.New(`lookup SEKRIT: no such host; user "ab"`)
	got := ScrubError(fmt.Errorf("connect: %w", inner), []string{"SEK", "SEKRIT", "ab", ""})
	if want := `connect: lookup ****: no such host; user "ab"`; got.Error() != want {
		t.Errorf("ScrubError = %q, want %q (the longest secret first; none under %d bytes)", got, want, MinScrubbed)
	}
	if !errors.Is(got, inner) {
		t.Error("ScrubError does not unwrap to the cause")
	}
	if ScrubError(nil, []string{"x"}) != nil || ScrubError(inner, nil) != inner {
		t.Error("ScrubError changes nil or an error without a secret")
	}
}
