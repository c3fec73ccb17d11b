package detect

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/vigil-soc/vigil"
)

// PortScan fires when the firewall denies one source address on at least
// Ports distinct destination ports within Span (default 20 in 1 minute):
// a recon observation, low, medium from Medium ports on (default 100),
// that grows while the scan lasts. The source address is the key node;
// the scanned addresses and the firewall are context.
type PortScan struct {
	Ports  int
	Span   time.Duration
	Medium int
	Local  string // LocalReport or LocalIgnore
}

// NamePortScan is the detector's name.
const NamePortScan = "port_scan"

func (d PortScan) Name() string { return NamePortScan }

func (d PortScan) Window() Window {
	n := orInt(d.Ports, 20)
	return Window{Span: orDur(d.Span, time.Minute), MinCount: n, MinDistinct: n}
}

func (d PortScan) Signals(ev *Event) []vigil.Signal {
	f := ev.Fields
	who, ok := deniedSource(f, d.Local)
	if !ok {
		return nil
	}
	port, ok := num(f, "destination.port")
	if !ok {
		return nil
	}
	dst, _ := validIP(str(f, "destination.ip"))
	return []vigil.Signal{{Key: who.key,
		Member: strconv.FormatInt(port, 10),
		Nodes:  nodes(who.nodes, node(vigil.NodeIP, dst, false), node(vigil.NodeHost, str(f, "host.name"), false)),
	}}
}

func (d PortScan) Describe(key string, w vigil.WindowState) vigil.Finding {
	sev := vigil.SeverityLow
	if w.Distinct >= orInt(d.Medium, 100) {
		sev = vigil.SeverityMedium
	}
	title := "Port scan from " + key
	desc := fmt.Sprintf("Port scan: %s from %s denied on %s", plural(w.Count, "packet"), key, plural(w.Distinct, "port"))
	ports := slices.Clone(w.Members)
	slices.SortFunc(ports, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
	desc += " (" + list(ports, w.Distinct) + ")"
	if dst := otherIP(w, actorAddr(key)); dst != "" {
		title += " against " + dst
		desc += " of " + dst
	}
	desc += ", " + span(w)
	return vigil.Finding{Type: "recon", Severity: sev, Title: title, Description: desc, Rollup: "Port scan"}
}

// firewallActions are the actions of the firewall parser; denied are the
// ones that refuse the packet.
var firewallActions = map[string]bool{"block": true, "drop": true, "reject": true, "deny": true, "pass": true, "accept": true, "log": true}

// deniedSource returns the source of a firewall event that refused a
// packet, as sourceActor names it under the local-source policy. A plain
// LOG rule ("log", no outcome) counts when it logged an inbound TCP SYN
// without ACK: a connection attempt that such rules log just before
// dropping it, as crowdsec's iptables scan fixture shows.
func deniedSource(f map[string]any, policy string) (actor, bool) {
	action := str(f, "event.action")
	if !firewallActions[action] {
		return actor{}, false
	}
	denied := str(f, "event.outcome") == "failure" || action == "block" || action == "drop" || action == "reject" || action == "deny"
	if !denied && action == "log" && str(f, "event.outcome") == "" {
		denied = inboundSYN(f)
	}
	if !denied {
		return actor{}, false
	}
	return sourceActor(f, str(f, "source.ip"), policy)
}

// inboundSYN reports whether f is a TCP SYN without ACK that came in on
// an interface and was not routed out of one.
func inboundSYN(f map[string]any) bool {
	if str(f, "network.transport") != "tcp" || str(f, "observer.ingress.interface.name") == "" ||
		str(f, "observer.egress.interface.name") != "" {
		return false
	}
	flags, _ := f["tcp.flags"].([]string)
	return slices.Contains(flags, "SYN") && !slices.Contains(flags, "ACK")
}

// otherIP returns the first IP node of w other than key.
func otherIP(w vigil.WindowState, key string) string {
	for _, n := range w.Nodes {
		if n.Type == vigil.NodeIP && n.Value != key {
			return n.Value
		}
	}
	return ""
}
