package sqlite

import "fmt"

// LimitPages caps the database at its current size plus extra pages on
// the writer connection (0 removes the cap), so that a test can make it
// full without filling a disk.
func LimitPages(s *Store, extra int) error {
	if extra == 0 {
		_, err := s.w.Exec(`PRAGMA max_page_count = 4294967294`)
		return err
	}
	var n int
	if err := s.w.QueryRow(`PRAGMA page_count`).Scan(&n); err != nil {
		return err
	}
	_, err := s.w.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, n+extra))
	return err
}
