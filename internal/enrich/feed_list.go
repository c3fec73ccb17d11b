package enrich

import (
	"bytes"
	"strings"
)

// parseList parses a plain list: one indicator (address, CIDR, domain,
// URL or hash) a line. It takes what block lists in the wild look like:
// full-line comments (#, ;, //, !), trailing comments after whitespace
// ("1.2.3.0/24 ; SBL123"), extra columns (the first field counts), and
// hosts-file lines ("0.0.0.0 evil.example"). It never fails: a line that
// is not an indicator is counted in skipped.
func parseList(data []byte) (inds []Indicator, skipped int) {
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' || line[0] == ';' || line[0] == '!' || bytes.HasPrefix(line, []byte("//")) {
			continue
		}
		if i := bytes.IndexAny(line, " \t,"); i >= 0 {
			first, rest := line[:i], bytes.TrimLeft(line[i+1:], " \t,")
			if isSinkhole(first) && len(rest) > 0 && rest[0] != '#' {
				// hosts file: the name is the second field.
				if j := bytes.IndexAny(rest, " \t#"); j >= 0 {
					rest = rest[:j]
				}
				first = rest
			}
			line = first
		}
		ind, ok := normIndicator(hintAuto, string(line))
		if !ok {
			skipped++
			continue
		}
		inds = append(inds, ind)
	}
	return inds, skipped
}

// isSinkhole reports whether a hosts-file address field is one that block
// lists point names at.
func isSinkhole(b []byte) bool {
	switch strings.TrimSpace(string(b)) {
	case "0.0.0.0", "127.0.0.1", "::", "::1", "0":
		return true
	}
	return false
}
