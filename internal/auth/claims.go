package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
)

// Identity claims, checked before anything reads them:
//
//	org_id  vigil.ValidOrgID
//	sub     optional; when present at most 256 bytes of UTF-8, not only blanks, no control
//	        characters (NUL, newlines, escapes): identity providers' subjects ("auth0|5f7c…",
//	        e-mail addresses, "CN=Jane Doe,O=Acme") fit
//	roles   each a possible role name: 1..100 characters, no NUL

// MaxSubjectLen bounds the sub claim.
const MaxSubjectLen = 256

// validSubject reports whether a non-empty sub claim may name a caller.
func validSubject(s string) bool {
	if len(s) > MaxSubjectLen || !utf8.ValidString(s) || strings.TrimSpace(s) == "" {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// validRoleName reports whether s could name a role (a name that cannot
// would reach the store only to fail there).
func validRoleName(s string) bool {
	return s != "" && utf8.RuneCountInString(s) <= vigil.MaxRoleNameLen && !strings.ContainsRune(s, 0)
}

// vigilClaims are the claim names Vigil reads. encoding/json, and so the
// JWT library, matches names without regard to case: "EXP" would be read
// as exp. Claim names are case-sensitive (RFC 7519 §4), so a name that
// differs from one of these only in case is refused.
var vigilClaims = []string{"exp", "nbf", "iat", "iss", "aud", "sub", "jti", "org_id", "roles", "permissions"}

// numericDates must be JSON numbers (RFC 7519 §2 NumericDate); the JWT
// library also takes a number in a string.
var numericDates = map[string]bool{"exp": true, "nbf": true, "iat": true}

// checkClaimsJSON refuses a verified token's claims that the JWT library
// read leniently: a member named twice (the library takes the last), a
// Vigil claim name in another case, a time that is not a JSON number.
func checkClaimsJSON(payload []byte) error {
	return members(payload, func(name string, value json.Token) error {
		if numericDates[name] {
			if _, ok := value.(json.Number); !ok {
				return unauthorized("invalid "+name+" claim", nil)
			}
		}
		for _, c := range vigilClaims {
			if name != c && strings.EqualFold(name, c) {
				return unauthorized(fmt.Sprintf("invalid claim name %q", name), nil)
			}
		}
		return nil
	}, func(name string) error {
		return unauthorized(fmt.Sprintf("duplicate claim %.64q", name), nil)
	})
}

// errNotObject is the refusal of a JOSE header or claims set that is not
// a JSON object.
var errNotObject = errors.New("not a JSON object")

// members calls each with the name and first token of every member of the
// JSON object raw, in order, and dup with a name seen before; values are
// not decoded further. Anything but one object is an error.
func members(raw []byte, each func(name string, value json.Token) error, dup func(name string) error) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errNotObject
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := t.(string)
		if seen[name] {
			return dup(name)
		}
		seen[name] = true
		value, err := dec.Token()
		if err != nil {
			return err
		}
		if err := each(name, value); err != nil {
			return err
		}
		// Step over the rest of an object or array value.
		for depth := nesting(value); depth > 0; {
			t, err := dec.Token()
			if err != nil {
				return err
			}
			depth += nesting(t)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return err
	}
	if _, err := dec.Token(); err == nil {
		return errNotObject // something after the object
	}
	return nil
}

func nesting(t json.Token) int {
	switch t {
	case json.Delim('{'), json.Delim('['):
		return 1
	case json.Delim('}'), json.Delim(']'):
		return -1
	}
	return 0
}
