package vigil

import (
	"encoding/json"
	"time"
)

// CacheEntry is one enrichment look-up result, shared by every worker
// process through the store. Results are public data (GeoIP, DNS, RDAP),
// so entries are per (provider, key), not per org; each org judges an
// entry's age against its own cache_ttl_hours.
type CacheEntry struct {
	Provider  string
	Key       string
	Value     json.RawMessage
	Negative  bool // the look-up failed or found nothing
	FetchedAt time.Time
}
