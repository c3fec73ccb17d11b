package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func cacheTests() []test {
	return []test{
		{"MissIsNil", func(t *testing.T, s Store) {
			e, err := s.CacheGet(t.Context(), "dns", "203.0.113.7")
			if err != nil || e != nil {
				t.Fatalf("CacheGet on empty cache = %+v, %v; want nil, nil", e, err)
			}
		}},
		{"PutGetReplace", func(t *testing.T, s Store) {
			put := &vigil.CacheEntry{Provider: "dns", Key: "203.0.113.7", Value: json.RawMessage(`{"ptr":["a.example."]}`), FetchedAt: base}
			if err := s.CachePut(t.Context(), put); err != nil {
				t.Fatalf("CachePut: %v", err)
			}
			got, err := s.CacheGet(t.Context(), "dns", "203.0.113.7")
			if err != nil || got == nil || !jsonEqual(got.Value, put.Value) || got.Negative || !got.FetchedAt.Equal(base) {
				t.Fatalf("CacheGet = %+v, %v; want %+v", got, err, put)
			}
			neg := &vigil.CacheEntry{Provider: "dns", Key: "203.0.113.7", Negative: true, FetchedAt: at(time.Hour)}
			if err := s.CachePut(t.Context(), neg); err != nil {
				t.Fatalf("CachePut: %v", err)
			}
			got, _ = s.CacheGet(t.Context(), "dns", "203.0.113.7")
			if got == nil || !got.Negative || !got.FetchedAt.Equal(at(time.Hour)) {
				t.Fatalf("after replace CacheGet = %+v; want the negative entry", got)
			}
			if other, _ := s.CacheGet(t.Context(), "rdap", "203.0.113.7"); other != nil {
				t.Fatalf("rdap entry %+v; providers must not share entries", other)
			}
		}},
		{"ArtifactEnrichment", func(t *testing.T, s Store) {
			a := newArtifact("auth", "x from 203.0.113.7", base)
			mustInsertArtifacts(t, s, "org-a", a)
			enr := json.RawMessage(`{"203.0.113.7":{"geo":{"country":"GB"}}}`)
			if err := s.SetArtifactEnrichment(t.Context(), "org-b", a.ID, json.RawMessage(`{"x":1}`)); err != nil && vigil.ErrorCode(err) != vigil.ENOTFOUND {
				t.Fatalf("other org: %v", err)
			}
			if err := s.SetArtifactEnrichment(t.Context(), "org-a", a.ID, enr); err != nil {
				t.Fatalf("SetArtifactEnrichment: %v", err)
			}
			if got := mustArtifact(t, s, "org-a", a.ID); !jsonEqual(got.Enrichment, enr) {
				t.Fatalf("enrichment = %s, want %s", got.Enrichment, enr)
			}
		}},
	}
}
