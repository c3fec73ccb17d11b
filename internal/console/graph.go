package console

import (
	"sort"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
)

// graph is the incident's observations (left) and nodes (right, by type)
// with a line for each node an observation names: drawn on the server as
// inline SVG, so the page needs no drawing library.
type graph struct {
	Width, Height int
	Obs           []graphObs
	Nodes         []graphNode
	Edges         []graphEdge
	Hidden        int // nodes not drawn
}

type graphObs struct {
	X, Y     int
	Label    string
	Severity string
}

type graphNode struct {
	X, Y  int
	Label string
	Type  string
	Key   bool
}

type graphEdge struct{ X1, Y1, X2, Y2 int }

// Bounds of the drawing: the rest is listed beside it.
const (
	graphMaxNodes = 30
	graphMaxObs   = 20
	graphRow      = 26
)

func newGraph(nodes []vigil.Node, obs []vigil.Observation) graph {
	ns := append([]vigil.Node{}, nodes...)
	rank := map[string]int{}
	for i, t := range nodeTypes {
		rank[t] = i
	}
	sort.SliceStable(ns, func(i, j int) bool {
		if isKey(ns[i]) != isKey(ns[j]) {
			return isKey(ns[i])
		}
		return rank[ns[i].Type] < rank[ns[j].Type]
	})
	g := graph{Width: 720}
	if len(ns) > graphMaxNodes {
		g.Hidden = len(ns) - graphMaxNodes
		ns = ns[:graphMaxNodes]
	}
	sort.SliceStable(ns, func(i, j int) bool { return rank[ns[i].Type] < rank[ns[j].Type] })
	obs = obs[:min(len(obs), graphMaxObs)]
	rows := max(len(ns), len(obs), 1)
	g.Height = rows*graphRow + 20
	at := map[string]int{}
	for i, n := range ns {
		y := 20 + i*graphRow + (rows-len(ns))*graphRow/2
		at[n.ID] = y
		g.Nodes = append(g.Nodes, graphNode{X: 460, Y: y, Label: clip(n.Value, 30), Type: n.Type, Key: isKey(n)})
	}
	for i, o := range obs {
		y := 20 + i*graphRow + (rows-len(obs))*graphRow/2
		g.Obs = append(g.Obs, graphObs{X: 250, Y: y, Label: clip(o.Type+": "+o.Description, 36), Severity: o.Severity})
		for _, id := range o.NodeIDs {
			if ny, ok := at[id]; ok {
				g.Edges = append(g.Edges, graphEdge{X1: 256, Y1: y, X2: 454, Y2: ny})
			}
		}
	}
	return g
}

// clip cuts s to n characters with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
