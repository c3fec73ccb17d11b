package api

// RouteTable returns "METHOD /v1/path" of every route of s's table, for
// tests that must cover each (a new route fails them until it is).
func RouteTable(s *Server) []string {
	var out []string
	for _, rt := range s.routeTable() {
		out = append(out, rt.method+" /v1"+rt.path)
	}
	return out
}
