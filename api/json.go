package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/models"
)

// maxBodyBytes bounds request bodies; the largest legitimate body (a full
// cart) is a few kilobytes.
const maxBodyBytes = 64 << 10

// decodeJSON strictly decodes the request body into dst: one JSON object,
// no unknown fields (a typo in a field name is an error, not a silently
// missing field), numbers into typed fields only. Errors name the field.
func decodeJSON(c *gin.Context, dst any) error {
	body := http.MaxBytesReader(c.Writer, c.Request.Body, maxBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return models.Errorf(models.CodeInvalidRequest, "Request body must be a single JSON object")
	}
	return nil
}

// decodeStrict decodes one already-read JSON value with the same rules.
func decodeStrict(raw json.RawMessage, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	return nil
}

func jsonError(err error) error {
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
		maxErr    *http.MaxBytesError
	)
	switch {
	case errors.Is(err, io.EOF):
		return models.Errorf(models.CodeInvalidRequest, "Request body is empty; a JSON object is required")
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return models.Errorf(models.CodeInvalidRequest, "Request body is not valid JSON")
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return models.Errorf(models.CodeInvalidRequest, "Request body must be a JSON object")
		}
		return models.FieldError(models.CodeInvalidRequest, typeErr.Field, "%s must be %s", typeErr.Field, jsonTypeName(typeErr.Type.Kind().String()))
	case errors.As(err, &maxErr):
		return models.Errorf(models.CodeInvalidRequest, "Request body is larger than %d bytes", maxBodyBytes)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for unknown fields.
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return models.FieldError(models.CodeInvalidRequest, field, "Unknown field %q", field)
	default:
		return models.Errorf(models.CodeInvalidRequest, "Request body could not be read as JSON")
	}
}

func jsonTypeName(kind string) string {
	switch kind {
	case "int", "int64", "int32":
		return "an integer"
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	case "bool":
		return "a boolean"
	default:
		return "of another type"
	}
}

// money renders an amount as a JSON number with exactly the currency's
// minor-unit digits, straight from the decimal: no float on the way.
func money(d decimal.Decimal, currency string) json.Number {
	return json.Number(d.StringFixed(models.MinorUnits(currency)))
}

// required returns an invalid_request error naming a missing field.
func required(field string) error {
	return models.FieldError(models.CodeInvalidRequest, field, "%s is required", field)
}

func invalid(field, format string, args ...any) error {
	return models.FieldError(models.CodeInvalidRequest, field, "%s", fmt.Sprintf(format, args...))
}
