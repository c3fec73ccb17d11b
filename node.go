package vigil

// Node types: the entities that link observations into incidents.
const (
	NodeIP     = "IP"
	NodeDomain = "Domain"
	NodeHost   = "Host"
	NodeUser   = "User"
	NodeHash   = "Hash"
	NodeURL    = "URL"
)

// ValidNodeType reports whether t is a known node type.
func ValidNodeType(t string) bool {
	switch t {
	case NodeIP, NodeDomain, NodeHost, NodeUser, NodeHash, NodeURL:
		return true
	}
	return false
}

// Node is one entity of an organization, unique per (org, type, value).
type Node struct {
	ID    string `json:"id"`
	OrgID string `json:"-"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

// NodeRef names a node by type and value, with its role in an observation:
// a key node joins observations into one incident, a context node is only
// recorded (DESIGN §8).
type NodeRef struct {
	Type  string `json:"type"`
	Value string `json:"value"`
	Key   bool   `json:"key"`
}
