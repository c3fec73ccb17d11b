package sqlite

// SetSearchPlan sets the thresholds by which SearchArtifacts picks how to
// list and count matches, so that tests run every way on small data.
func SetSearchPlan(s *Store, denseMatches, windowScan int) {
	s.plan = searchPlan{denseMatches: denseMatches, windowScan: windowScan}
}
