package postgres

import "context"

// SetSearchHook makes every search call hook while it holds its token and
// connection, and returns how many searches may hold them at once.
func SetSearchHook(s *Store, hook func(context.Context)) int {
	s.searchHook = hook
	return cap(s.searches)
}

// CorrelationReads are the queries of a correlation that find incidents by
// the key nodes or ids it names, for their plans.
var CorrelationReads = map[string]string{"open incidents": openIncidentsSQL, "hub nodes": hubNodesSQL, "lock incidents": lockIncidentsSQL}

// SetSampleRows sets how many rows an estimated total samples.
func SetSampleRows(s *Store, n int) { s.sampleRows = n }
