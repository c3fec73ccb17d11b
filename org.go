package vigil

import "strings"

// MaxOrgIDLen bounds an org id.
const MaxOrgIDLen = 128

// ValidOrgID reports whether s may be an org id: 1..128 bytes, an ASCII
// letter or digit, then letters, digits, '_', '.', ':', '@' or '-'. UUIDs,
// slugs and "tenant:acme@eu-1" fit; blanks, '/', control characters and
// NUL do not. Every record carries its org id, every query compares it,
// every log line of a request shows it, and both stores must keep it: it
// is an identifier of a fixed shape wherever it comes from (a token's
// org_id claim, a syslog listener's org).
func ValidOrgID(s string) bool {
	if len(s) < 1 || len(s) > MaxOrgIDLen || !alnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !alnum(c) && !strings.ContainsRune("_.:@-", rune(c)) {
			return false
		}
	}
	return true
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// OrgIDRule says what ValidOrgID takes, for error messages.
const OrgIDRule = "1..128 ASCII letters, digits, '_', '.', ':', '@' or '-', starting with a letter or digit"
