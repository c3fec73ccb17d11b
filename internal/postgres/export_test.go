package postgres

import "context"

// SetSearchHook makes every search call hook while it holds its token and
// connection, and returns how many searches may hold them at once.
func SetSearchHook(s *Store, hook func(context.Context)) int {
	s.searchHook = hook
	return cap(s.searches)
}

// SetSampleRows sets how many rows an estimated total samples.
func SetSampleRows(s *Store, n int) { s.sampleRows = n }
