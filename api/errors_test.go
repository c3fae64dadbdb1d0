package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// modelCodes lists every constant of type models.Code declared in package
// models, read from its source so a code added there without a status here
// fails this test instead of silently becoming a 500.
func modelCodes(t *testing.T) map[models.Code]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "models", "*.go"))
	require.NoError(t, err)
	fset := token.NewFileSet()
	codes := map[models.Code]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
					continue
				}
				for i, name := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					require.Truef(t, ok && lit.Kind == token.STRING, "%s is not a string literal", name.Name)
					codes[models.Code(strings.Trim(lit.Value, "`\""))] = name.Name
				}
			}
		}
	}
	require.NotEmpty(t, codes, "no models.Code constants found")
	return codes
}

// workflowOnlyCodes are the models.Code constants, by name, that the
// models package documents as never reaching API clients: they are type
// strings of Temporal application errors inside the order workflow. Every
// other code must have an explicit HTTP status.
var workflowOnlyCodes = map[string]bool{
	"CodeSourcingFailed": true,
}

func TestStatusTableCoversEveryCode(t *testing.T) {
	for code, name := range modelCodes(t) {
		if workflowOnlyCodes[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			_, ok := httpStatus[code]
			assert.Truef(t, ok, "models.%s (%q) has no explicit entry in httpStatus", name, code)
			assert.NotEmptyf(t, models.DefaultMessage(code), "models.%s has no default message", name)
			if strings.HasSuffix(string(code), "_not_found") {
				assert.Equal(t, http.StatusNotFound, StatusOf(code), "every *_not_found is a 404")
			}
		})
	}
}

func TestStatusOf(t *testing.T) {
	tests := []struct {
		code models.Code
		want int
	}{
		{models.CodeMissingAPIKey, http.StatusUnauthorized},
		{models.CodeInvalidAPIKey, http.StatusUnauthorized},
		{models.CodeInvalidRequest, http.StatusBadRequest},
		{models.CodeInvalidURL, http.StatusBadRequest},
		{models.CodePlanRequired, http.StatusForbidden},
		{models.CodeTestModeOnly, http.StatusForbidden},
		{models.CodeCartNotFound, http.StatusNotFound},
		{models.CodeOrderNotFound, http.StatusNotFound},
		{models.CodeNotFound, http.StatusNotFound},
		{models.CodeMethodNotAllowed, http.StatusMethodNotAllowed},
		{models.CodeCartAlreadyOrdered, http.StatusConflict},
		{models.CodeIdempotencyMismatch, http.StatusUnprocessableEntity},
		{models.CodeIdempotencyKeyInUse, http.StatusConflict},
		{models.CodeProductUnavailable, http.StatusUnprocessableEntity},
		{models.CodeShippingUnavailable, http.StatusUnprocessableEntity},
		{models.CodeInvalidAddress, http.StatusUnprocessableEntity},
		{models.CodeInvalidEmail, http.StatusUnprocessableEntity},
		{models.CodeUnsupportedAsset, http.StatusUnprocessableEntity},
		{models.CodeRateLimited, http.StatusTooManyRequests},
		{models.CodeInternal, http.StatusInternalServerError},
		{models.CodeLiveUnavailable, http.StatusServiceUnavailable},
		{models.CodeUnavailable, http.StatusServiceUnavailable},
		{models.CodeRateUnavailable, http.StatusServiceUnavailable},
		{models.CodeMarketplaceUnavailable, http.StatusServiceUnavailable},
		{models.Code("no_such_code"), http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			assert.Equal(t, tt.want, StatusOf(tt.code))
		})
	}
	t.Run("only client errors are 4xx", func(t *testing.T) {
		// A 5xx tells clients to retry; a 4xx tells them not to. The server
		// side codes must never be filed as client errors or vice versa.
		for code, status := range httpStatus {
			server := code == models.CodeInternal || code == models.CodeLiveUnavailable || code == models.CodeUnavailable || code == models.CodeRateUnavailable ||
				code == models.CodeMarketplaceUnavailable
			assert.Equalf(t, server, status >= 500, "%s → %d", code, status)
		}
	})
}
