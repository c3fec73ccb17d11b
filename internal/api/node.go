package api

import (
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
)

// nodeView is a node as GET /v1/nodes shows it: the fields of an
// incident's nodes plus its org and when the org first named it.
type nodeView struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"org_id"`
	Type      string    `json:"type"`
	Value     string    `json:"value"`
	CreatedAt time.Time `json:"created_at"`
}

func viewNode(n *vigil.Node) nodeView {
	return nodeView{ID: n.ID, OrgID: n.OrgID, Type: n.Type, Value: n.Value, CreatedAt: n.CreatedAt}
}

// nodeFilter reads the filters of GET /v1/nodes: type; value, compared
// exactly after the normalization of its type (of every type it is valid
// for when no type is given); prefix, of the stored (normalized) value.
func (q *query) nodeFilter() vigil.NodeFilter {
	f := vigil.NodeFilter{Type: q.str("type")}
	if f.Type != "" && !vigil.ValidNodeType(f.Type) {
		q.bad("type", "must be one of IP, Domain, Host, User, Hash, URL")
		f.Type = ""
	}
	if v := q.str("value"); v != "" {
		types := []string{f.Type}
		if f.Type == "" {
			types = []string{vigil.NodeIP, vigil.NodeDomain, vigil.NodeHost, vigil.NodeUser, vigil.NodeHash, vigil.NodeURL}
		}
		var last string
		for _, typ := range types {
			norm, issue := vigil.NormalizeNodeValue(typ, v)
			if issue != "" {
				last = issue
				continue
			}
			f.Match = append(f.Match, vigil.NodeRef{Type: typ, Value: norm})
		}
		if len(f.Match) == 0 {
			if f.Type == "" {
				last = "is not a valid value of any node type"
			}
			q.bad("value", last)
		}
	}
	if p := q.str("prefix"); p != "" {
		switch {
		case len(p) > vigil.MaxNodeValueLen:
			q.bad("prefix", "must be at most 2048 bytes")
		case !utf8.ValidString(p) || strings.ContainsFunc(p, unicode.IsControl):
			q.bad("prefix", "must be UTF-8 text without control characters")
		default:
			// Values of these types are stored in lower case.
			if f.Type == vigil.NodeDomain || f.Type == vigil.NodeHost || f.Type == vigil.NodeHash {
				p = strings.ToLower(p)
			}
			f.Prefix = p
		}
	}
	f.Page = q.page()
	return f
}

func (s *Server) listNodes(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r.URL.Query())
	f := q.nodeFilter()
	if err := q.err(); err != nil {
		s.fail(w, r, err)
		return
	}
	nodes, total, err := s.store.ListNodes(r.Context(), principal(r.Context()).OrgID, f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	views := make([]nodeView, len(nodes))
	for i, n := range nodes {
		views[i] = viewNode(n)
	}
	ok(w, http.StatusOK, "Nodes retrieved successfully", listData("nodes", views, total, f.Page))
}

func (s *Server) getNode(w http.ResponseWriter, r *http.Request) {
	n, err := s.store.GetNode(r.Context(), principal(r.Context()).OrgID, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "Node retrieved successfully", viewNode(n))
}
