package detect

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// HostSweep fires when the firewall denies one source address on one
// destination port (or ICMP) of at least Hosts distinct addresses within
// Span (default 20 in 1 minute): a recon observation, low, medium from
// Medium addresses on (default 100). The source address is the key node;
// the swept addresses and the firewall are context.
type HostSweep struct {
	Hosts  int
	Span   time.Duration
	Medium int
	Local  string // LocalReport or LocalIgnore
}

// NameHostSweep is the detector's name.
const NameHostSweep = "host_sweep"

func (d HostSweep) Name() string { return NameHostSweep }

func (d HostSweep) Window() Window {
	n := orInt(d.Hosts, 20)
	return Window{Span: orDur(d.Span, time.Minute), MinCount: n, MinDistinct: n}
}

func (d HostSweep) Signals(ev *Event) []vigil.Signal {
	f := ev.Fields
	who, ok := deniedSource(f, d.Local)
	if !ok {
		return nil
	}
	dst, ok := validIP(str(f, "destination.ip"))
	if !ok {
		return nil
	}
	var port string
	if p, ok := num(f, "destination.port"); ok {
		port = strconv.FormatInt(p, 10)
	} else if t := str(f, "network.transport"); t == "icmp" || t == "ipv6-icmp" {
		port = t
	} else {
		return nil
	}
	return []vigil.Signal{{Key: who.key + "|" + port,
		Member: dst,
		Nodes:  nodes(who.nodes, node(vigil.NodeIP, dst, false), node(vigil.NodeHost, str(f, "host.name"), false)),
	}}
}

func (d HostSweep) Describe(key string, w vigil.WindowState) vigil.Finding {
	src, port, _ := strings.Cut(key, "|")
	sev := vigil.SeverityLow
	if w.Distinct >= orInt(d.Medium, 100) {
		sev = vigil.SeverityMedium
	}
	what := "port " + port
	if port == "icmp" || port == "ipv6-icmp" {
		what = "ICMP"
	}
	title := "Host sweep from " + src + " on " + what
	desc := fmt.Sprintf("Host sweep: %s from %s on %s denied at %s (%s), %s",
		plural(w.Count, "packet"), src, what, plural(w.Distinct, "address"), list(w.Members, w.Distinct), span(w))
	return vigil.Finding{Type: "recon", Severity: sev, Title: title, Description: desc, Rollup: "Host sweep"}
}
