package bench

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// internetPopulation is how many public addresses the Zipf mix draws
// from: about what an internet-facing host sees scan it in a day.
const internetPopulation = 1_000_000

// internetLines generates n lines of what an internet-facing host logs,
// the mix of a firewall and an sshd exposed to background scanning with
// its resolver busy (46 % UFW BLOCK, 36 % BIND queries, 18 % failed sshd
// logins), dated in the hour before now, with a fixed seed. The source
// addresses of the blocks and failed logins are distinct on every line
// when unique (the worst case for detection state: every line a new
// key), else drawn from a Zipf distribution over internetPopulation
// addresses (s = 1.1: a few heavy scanners, a long tail seen once or
// twice). The resolver's clients are 500 internal addresses.
func internetLines(n int, now time.Time, unique bool) []line {
	r := rand.New(rand.NewPCG(13, 17))
	g := newInternetGen(r, unique)
	out := make([]line, 0, n)
	for range n {
		t := now.Add(-time.Duration(r.IntN(3600)) * time.Second)
		switch k := r.IntN(100); {
		case k < 46:
			out = append(out, g.block(t, g.public()))
		case k < 82:
			out = append(out, g.query(t))
		default:
			out = append(out, g.failed(t, g.public()))
		}
	}
	return out
}

// internetGen writes the lines of an internet-facing host: UFW blocks and
// failed sshd logins from public sources, BIND queries of internal
// clients.
type internetGen struct {
	r      *rand.Rand
	zipf   *rand.Zipf
	unique bool
	seq    uint64
}

func newInternetGen(r *rand.Rand, unique bool) *internetGen {
	return &internetGen{r: r, zipf: rand.NewZipf(r, 1.1, 1, internetPopulation-1), unique: unique}
}

func (g *internetGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

// public returns the next public source: new on every call when unique,
// else drawn from the Zipf population.
func (g *internetGen) public() string {
	if g.unique {
		g.seq++
		return publicAddr(g.seq - 1)
	}
	return publicAddr(g.zipf.Uint64())
}

var (
	internetUsers = []string{"root", "admin", "ubuntu", "user", "test", "oracle", "postgres", "git", "pi", "deploy", "ftpuser", "guest"}
	internetPorts = []string{"22", "23", "80", "443", "445", "1433", "3306", "3389", "5900", "6379", "8080", "8443", "9200", "27017"}
	internetZones = []string{"example.com", "example.org", "cdn.example.net", "updates.vendor.example", "api.example.io", "mail.example.com"}
)

// block is UFW's line of a blocked SYN from src at t.
func (g *internetGen) block(t time.Time, src string) line {
	r := g.r
	return line{Source: "firewall", Raw: fmt.Sprintf("%s edge-01 kernel: [%d.%06d] [UFW BLOCK] IN=eth0 OUT= MAC=52:54:00:12:34:56:52:54:00:65:43:21:08:00 SRC=%s DST=203.0.113.10 LEN=44 TOS=0x00 PREC=0x00 TTL=%d ID=%d PROTO=TCP SPT=%d DPT=%s WINDOW=1024 RES=0x00 SYN URGP=0",
		t.Format(time.Stamp), r.IntN(900000), r.IntN(1000000), src, 30+r.IntN(220), r.IntN(65535), 1024+r.IntN(64000), g.pick(internetPorts...))}
}

// query is BIND's query-log line of an internal client at t.
func (g *internetGen) query(t time.Time) line {
	r := g.r
	name := g.pick("www.", "api.", "static.", "login.", "img.") + g.pick(internetZones...)
	client := fmt.Sprintf("10.1.%d.%d", r.IntN(2), 2+r.IntN(250))
	return line{Source: "dns", Raw: fmt.Sprintf("%s ns1 named[%d]: client @0x7f3c2c0a8b60 %s#%d (%s): query: %s IN %s +E(0)K (10.1.0.53)",
		t.Format(time.Stamp), 900+r.IntN(50), client, 1024+r.IntN(60000), name, name, g.pick("A", "AAAA", "HTTPS"))}
}

// failed is sshd's line of a failed password from src at t.
func (g *internetGen) failed(t time.Time, src string) line {
	r := g.r
	user := g.pick(internetUsers...)
	invalid := ""
	if user != "root" && r.IntN(2) == 0 {
		invalid = "invalid user "
	}
	return line{Source: "auth", Raw: fmt.Sprintf("%s edge-01 sshd[%d]: Failed password for %s%s from %s port %d ssh2",
		t.Format(time.Stamp), 1000+r.IntN(30000), invalid, user, src, 1024+r.IntN(64000))}
}

// publicAddr is the i-th address of a population spread over 11.0.0.0/8
// (public, routed, and nobody's documentation range, so that the
// local-source policy treats it as the internet).
func publicAddr(i uint64) string {
	// 13 is prime to 2^24: distinct i below 2^24 give distinct addresses.
	a := 11<<24 | uint32(i*13)&(1<<24-1)
	return fmt.Sprintf("%d.%d.%d.%d", a>>24, a>>16&255, a>>8&255, a&255)
}

// scannerOctets are the first octets the public addresses of the
// internet mixes take on each pass over their lines (renumber): 11 on the
// first, then every /8 that is public, routed and nobody's special range
// (no private, shared, loopback, link-local, documentation, benchmarking,
// multicast or reserved /8, and none that holds one), two-digit ones
// first. 215 passes of 200,000 lines: 43 M lines before an address comes
// back, more than 30 minutes of the edge mix at 20,000/s. (89 passes, the
// two-digit ones alone, were 17.8 M lines: a fast 30-minute run sent its
// first scanners again in its last minutes, within their detectors'
// horizons, and measured a mix of returning scanners instead.)
var scannerOctets = func() []string {
	octets := []string{"11"}
	add := func(from, to int) {
		for o := from; o <= to; o++ {
			octets = append(octets, strconv.Itoa(o))
		}
	}
	add(12, 99)
	add(1, 9)
	add(101, 126) // 100: 100.64.0.0/10 is shared (CGNAT); 127: loopback
	add(128, 168) // 169: link-local
	add(170, 171) // 172: 172.16.0.0/12 is private
	add(173, 191) // 192: private, documentation and others
	add(193, 197) // 198: benchmarking and documentation (the planted sources)
	add(199, 202) // 203: documentation
	add(204, 223) // 224 on: multicast and reserved
	return octets
}()

// renumberOctet returns the first octet of the round-th pass's scanners.
func renumberOctet(round int) string {
	return scannerOctets[round%len(scannerOctets)]
}

// renumberFrom are what precedes a scanner's address in a body of the
// internet mixes: a firewall block, a failed login, and an EVE alert's
// source (a JSON string within the body's JSON).
var renumberFrom = [][]byte{[]byte("SRC=11."), []byte("from 11."), []byte(`src_ip\":\"11.`)}

// renumber returns a body of the internet-unique or internet-edge mix as
// the round-th pass over the lines sends it: from the second pass on, the
// public addresses of blocks, failed logins and alerts move from
// 11.0.0.0/8 to another public /8 (scannerOctets), and after 215 passes
// their second octet too (renumberCopy), so that they stay new for 860
// passes instead of repeating after 200,000 lines, when a fast run would
// make every address of the mix a brute force. Other mixes,
// and every mix sent --via syslog-tcp (its frames are built once), are
// sent as they are. owned says body is the caller's own copy, then edited
// in place where the new octet has two digits, as 11 has: the bench's
// clients share the embedded server's heap, and more copies of every body
// were garbage the server's collector paid for.
func (b *bench) renumber(body []byte, round int, owned bool) []byte {
	octet := renumberOctet(round)
	epoch := round / len(scannerOctets) % scannerEpochs
	if (b.f.Files != "internet-unique" && b.f.Files != "internet-edge") || octet == "11" && epoch == 0 {
		return body
	}
	b.renumbered.Store(true)
	if epoch > 0 || len(octet) != 2 {
		return renumberCopy(body, octet, 64*epoch)
	}
	if !owned {
		body = bytes.Clone(body)
	}
	for _, p := range renumberFrom {
		for at := 0; ; {
			j := bytes.Index(body[at:], p)
			if j < 0 {
				break
			}
			at += j + len(p)
			copy(body[at-3:at-1], octet)
		}
	}
	return body
}

// scannerEpochs is how many times the passes over scannerOctets run,
// each with the scanners' second octet moved by 64 (renumberCopy): 860
// passes, 172 M lines, before an address comes back. (215 passes were
// 43 M lines, 30 minutes at 24,000 a second: a run that fast sent its
// first scanners again in its last minute.)
const scannerEpochs = 4

// renumberCopy returns a copy of body with the scanners' addresses
// 11.a.b.c as octet.(a+shift).b.c: a first octet of another width than
// 11's, or an epoch's second octet (shift 64 an epoch: publicAddr's
// addresses of the 200,000 lines have a second octet below 64,
// TestScannersLeaveRoomForEpochs, so that each epoch's are new).
func renumberCopy(body []byte, octet string, shift int) []byte {
	out := make([]byte, 0, len(body)+len(body)/32)
	copied := 0 // body[:copied] is in out
	for i := 0; ; {
		j := bytes.Index(body[i:], []byte("11."))
		if j < 0 {
			return append(out, body[copied:]...)
		}
		at := i + j // the first octet
		i = at + 3
		if !slices.ContainsFunc(renumberFrom, func(p []byte) bool { return bytes.HasSuffix(body[:at], p[:len(p)-3]) }) {
			continue
		}
		k := i
		for k < len(body) && k < i+3 && '0' <= body[k] && body[k] <= '9' {
			k++
		}
		a, _ := strconv.Atoi(string(body[i:k]))
		out = append(out, body[copied:at]...)
		out = append(out, octet...)
		out = append(out, '.')
		out = strconv.AppendInt(out, int64(a+shift), 10)
		copied, i = k, k
	}
}

// internetLineCount is how many lines the internet mixes hold; the unique
// mix is renumbered on each pass over them (renumber).
const internetLineCount = 200_000
