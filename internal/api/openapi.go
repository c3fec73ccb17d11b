package api

import (
	_ "embed"
	"net/http"
)

// openapiDoc is the OpenAPI 3.1 description of the whole API.
//
//go:embed openapi.json
var openapiDoc []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openapiDoc)
}
