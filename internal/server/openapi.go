package server

import (
	_ "embed"
	"net/http"
)

// openapiJSON describes every API route (server_test checks it against
// the handlers, in both directions).
//
//go:embed openapi.json
var openapiJSON []byte

// OpenAPI returns the OpenAPI 3.1 document of the API.
func OpenAPI() []byte { return openapiJSON }

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openapiJSON)
}
