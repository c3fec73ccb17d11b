package vigil

import (
	"errors"
	"net/url"
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
