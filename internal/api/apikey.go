package api

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/auth"
)

type apiKeyBody struct {
	Name *string `json:"name"`
}

// createdAPIKey is the reply to a creation: the key, and its secret, which
// no other reply shows.
type createdAPIKey struct {
	*vigil.APIKey
	// Key is the secret: a bearer token, a Basic password, or the api_key
	// of Elasticsearch clients' "id:api_key".
	Key string `json:"key"`
	// Encoded is base64("id:key"), the value of an "Authorization: ApiKey"
	// header.
	Encoded string `json:"encoded"`
}

func (s *Server) createAPIKey(w http.ResponseWriter, r *http.Request) {
	var b apiKeyBody
	if err := decode(w, r, &b); err != nil {
		s.fail(w, r, err)
		return
	}
	if b.Name == nil {
		s.fail(w, r, vigil.InvalidField("name", "is required"))
		return
	}
	name := strings.TrimSpace(*b.Name)
	if n := utf8.RuneCountInString(name); n < 1 || n > vigil.MaxAPIKeyNameLen {
		s.fail(w, r, vigil.InvalidField("name", "must be 1..200 characters"))
		return
	}
	if strings.ContainsRune(name, 0) {
		s.fail(w, r, vigil.InvalidField("name", "must not contain NUL characters"))
		return
	}
	p := principal(r.Context())
	k := &vigil.APIKey{ID: vigil.NewID(), Name: name, Permissions: []string{vigil.APIKeyPermission},
		CreatedBy: p.Subject, CreatedAt: s.now()}
	secret, hash := auth.NewAPIKey(k.ID)
	k.Hash = hash
	if err := s.store.CreateAPIKey(r.Context(), p.OrgID, k); err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusCreated, "API key created; its key is shown only now", createdAPIKey{APIKey: k, Key: secret,
		Encoded: auth.EncodedAPIKey(k.ID, secret)})
}

func (s *Server) getAPIKey(w http.ResponseWriter, r *http.Request) {
	k, err := s.store.GetAPIKey(r.Context(), principal(r.Context()).OrgID, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok(w, http.StatusOK, "API key retrieved successfully", k)
}

func (s *Server) listAPIKeys(w http.ResponseWriter, r *http.Request) {
	servePage(s, w, r, "api_keys", "API keys retrieved successfully", s.store.ListAPIKeys)
}

// revokeAPIKey revokes a key: every process refuses it within
// auth.DefaultKeyTTL (its cache of keys). The key stays listed, with
// revoked_at.
func (s *Server) revokeAPIKey(w http.ResponseWriter, r *http.Request) {
	k, err := s.store.RevokeAPIKey(r.Context(), principal(r.Context()).OrgID, r.PathValue("id"), s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.keys.Forget(k.ID)
	ok(w, http.StatusOK, "API key revoked", k)
}
