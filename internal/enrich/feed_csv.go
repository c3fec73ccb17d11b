package enrich

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"strings"
)

// csvColumns maps header names (lower case, spaces and dashes as
// underscores) to what the column holds. Generic names (indicator, value,
// ioc) defer to a type column when there is one.
var csvColumns = map[string]hint{
	"indicator": hintAuto, "indicator_value": hintAuto, "ioc": hintAuto, "ioc_value": hintAuto,
	"value": hintAuto, "observable": hintAuto, "observable_value": hintAuto,

	"ip": hintIP, "ip_address": hintIP, "ipaddress": hintIP, "ipv4": hintIP, "ipv6": hintIP,
	"dst_ip": hintIP, "src_ip": hintIP, "ip_dst": hintIP, "ip_src": hintIP, "cidr": hintIP,
	"network": hintIP, "netblock": hintIP, "prefix": hintIP,

	"domain": hintDomain, "domain_name": hintDomain, "hostname": hintDomain, "host": hintDomain, "fqdn": hintDomain,

	"url": hintURL,

	"md5": hintHash, "md5_hash": hintHash, "sha1": hintHash, "sha1_hash": hintHash,
	"sha256": hintHash, "sha256_hash": hintHash, "sha512": hintHash, "sha512_hash": hintHash,
	"hash": hintHash, "file_hash": hintHash, "filehash": hintHash,
}

var csvTypeColumns = map[string]bool{"type": true, "indicator_type": true, "ioc_type": true, "kind": true, "attribute_type": true}

// typeHint maps the value of a type column to a hint; unknown types let
// the value tell.
func typeHint(t string) hint {
	t = strings.ToLower(strings.TrimSpace(t))
	switch {
	case t == "":
		return hintAuto
	case strings.HasPrefix(t, "ip"), t == "cidr", t == "netblock", t == "network", t == "ipv4-addr", t == "ipv6-addr":
		return hintIP
	case t == "domain", t == "hostname", t == "fqdn", t == "domain-name", t == "host", t == "domain_name":
		return hintDomain
	case t == "url", t == "uri":
		return hintURL
	case t == "md5", t == "sha1", t == "sha-1", t == "sha256", t == "sha-256", t == "sha512", t == "hash", t == "filehash", t == "file", t == "filehash-md5", t == "filehash-sha1", t == "filehash-sha256":
		return hintHash
	}
	return hintAuto
}

func headerKey(s string) string {
	s = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "#")))
	s = strings.Trim(s, `"' `)
	return strings.NewReplacer(" ", "_", "-", "_").Replace(s)
}

// csvLayout is where the indicators are in a CSV row.
type csvLayout struct {
	cols    []int
	hints   []hint
	typeCol int // -1: none
}

// layoutOf reads a header row; ok is false when no column names an
// indicator.
func layoutOf(header []string) (csvLayout, bool) {
	l := csvLayout{typeCol: -1}
	for i, h := range header {
		k := headerKey(h)
		if hn, ok := csvColumns[k]; ok {
			l.cols = append(l.cols, i)
			l.hints = append(l.hints, hn)
		} else if csvTypeColumns[k] && l.typeCol < 0 {
			l.typeCol = i
		}
	}
	return l, len(l.cols) > 0
}

// parseCSV parses a CSV (or, for a header of tab-separated names, TSV)
// feed with a header naming its columns (indicator/value/ioc, or typed
// names such as ip, domain, url, sha256, plus an optional type column).
// abuse.ch-style files, whose header is the last of the leading "#"
// comment lines, are understood. Without a recognizable header every
// row's first field is taken as an indicator of whatever type it is.
func parseCSV(data []byte) (inds []Indicator, skipped int, err error) {
	br := bufio.NewReader(bytes.NewReader(data))
	// Leading comment lines; the last one may be the header.
	var lastComment string
	for {
		peek, _ := br.Peek(1)
		if len(peek) == 0 || peek[0] != '#' {
			break
		}
		line, err := br.ReadString('\n')
		if s := strings.TrimSpace(strings.TrimPrefix(line, "#")); s != "" {
			lastComment = s
		}
		if err != nil {
			break
		}
	}
	rest, _ := io.ReadAll(br)
	comma := ','
	if firstLine, _, _ := strings.Cut(string(rest), "\n"); !strings.Contains(firstLine, ",") && strings.Contains(firstLine, "\t") {
		comma = '\t'
	}
	r := csv.NewReader(bytes.NewReader(rest))
	r.Comma = comma
	r.Comment = '#'
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.ReuseRecord = true
	r.TrimLeadingSpace = true

	var layout csvLayout
	haveLayout := false
	if lastComment != "" {
		cr := csv.NewReader(strings.NewReader(lastComment))
		cr.LazyQuotes, cr.TrimLeadingSpace = true, true
		if rec, err := cr.Read(); err == nil {
			layout, haveLayout = layoutOf(rec)
		}
	}
	first := true
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return inds, skipped, err
			}
			skipped++ // a malformed row; the reader goes on with the next
			continue
		}
		if first {
			first = false
			if l, ok := layoutOf(rec); ok {
				layout, haveLayout = l, true
				continue
			}
			if !haveLayout {
				if _, ok := normIndicator(hintAuto, rec[0]); !ok {
					continue // a header of unknown names
				}
			}
		}
		if !haveLayout {
			if ind, ok := normIndicator(hintAuto, rec[0]); ok {
				inds = append(inds, ind)
			} else {
				skipped++
			}
			continue
		}
		typed := hintAuto
		if layout.typeCol >= 0 && layout.typeCol < len(rec) {
			typed = typeHint(rec[layout.typeCol])
		}
		for i, c := range layout.cols {
			if c >= len(rec) || strings.TrimSpace(rec[c]) == "" {
				continue
			}
			h := layout.hints[i]
			if h == hintAuto {
				h = typed
			}
			v := rec[c]
			if h == hintIP || h == hintAuto {
				// "1.2.3.4:443" or "1.2.3.4|443" as seen in C2 lists.
				v = stripPort(v)
			}
			if ind, ok := normIndicator(h, v); ok {
				inds = append(inds, ind)
			} else if ind, ok := normIndicator(hintAuto, v); ok && h != hintAuto {
				// A mislabelled column still yields what it holds.
				inds = append(inds, ind)
			} else {
				skipped++
			}
		}
	}
	return inds, skipped, nil
}

// stripPort removes a port suffix from an IPv4 address or host ("1.2.3.4:80",
// "1.2.3.4|80"); IPv6 addresses and URLs are left alone.
func stripPort(v string) string {
	v = strings.TrimSpace(v)
	if strings.Contains(v, "://") {
		return v
	}
	if i := strings.IndexByte(v, '|'); i >= 0 {
		return v[:i]
	}
	if strings.Count(v, ":") == 1 {
		return v[:strings.IndexByte(v, ':')]
	}
	return v
}
