package api

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// openAPIDocument is the OpenAPI 3.1 description of every route in
// routes. The api tests validate every response they receive against it,
// so a change to a handler that the document does not follow fails them.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPIDocument returns the OpenAPI 3.1 document served at
// GET /v1/openapi.json. The slice is the caller's own.
func OpenAPIDocument() []byte {
	return append([]byte(nil), openAPIDocument...)
}

// serveOpenAPI is GET /v1/openapi.json: public, not rate limited.
func serveOpenAPI(c *gin.Context) {
	c.Data(http.StatusOK, "application/json", openAPIDocument)
}
