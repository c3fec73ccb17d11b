package api

import "cmp"

// RouteTable returns "METHOD /v1/path" of every route of s's table, for
// tests that must cover each (a new route fails them until it is).
func RouteTable(s *Server) []string {
	var out []string
	for _, rt := range s.routeTable() {
		out = append(out, rt.method+" /v1"+rt.path)
	}
	return out
}

// ElasticRouteTable returns "METHOD /v1/path" of every route of the
// Elasticsearch-compatible endpoint ("ANY" for the one of every method).
func ElasticRouteTable(s *Server) []string {
	var out []string
	for _, rt := range s.elasticTable() {
		out = append(out, cmp.Or(rt.method, "ANY")+" /v1"+rt.path)
	}
	return out
}
