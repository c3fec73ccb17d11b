package sqlite

import "context"

// SetSearchPlan sets the thresholds by which SearchArtifacts picks how to
// list and count matches, so that tests run every way on small data.
func SetSearchPlan(s *Store, denseMatches, windowScan int) {
	s.plan = searchPlan{denseMatches: denseMatches, windowScan: windowScan}
}

// SetSearchHook makes every search call hook while it holds its
// connection, and returns how many searches may hold one at once.
func SetSearchHook(s *Store, hook func(context.Context)) int {
	s.searchHook = hook
	return s.search.Stats().MaxOpenConnections
}
