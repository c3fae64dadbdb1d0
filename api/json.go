package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/models"
)

// maxBodyBytes bounds request bodies; the largest legitimate body (a full
// cart) is a few kilobytes.
const maxBodyBytes = 64 << 10

// maxJSONDepth bounds nesting: no request body here nests deeper than 4.
const maxJSONDepth = 16

// decodeJSON strictly decodes the request body into dst. The rules, which
// README.md documents:
//   - Content-Type is application/json (charset, if given, utf-8): 415
//     unsupported_media_type otherwise;
//   - the body is one JSON object of valid UTF-8, at most maxBodyBytes;
//   - key names match exactly (encoding/json alone would match
//     "Amount" to "amount"); an unknown key is an error naming it;
//   - a key given twice in one object is an error (encoding/json alone
//     would keep the last one silently);
//   - no string, key or value, contains a NUL character (drivers refuse
//     them, and nothing legitimate needs one), nor a \u escape of half a
//     UTF-16 surrogate pair without its other half (\ud800 is valid JSON
//     syntax but no character: encoding/json alone would store U+FFFD);
//   - numbers go into typed fields only; a type error names the field.
func decodeJSON(c *gin.Context, dst any) error {
	raw, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxBodyBytes))
	if err != nil {
		return jsonError(err)
	}
	// A missing body is said so, whatever its (absent) type.
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := requireJSONContentType(c.Request); err != nil {
			return err
		}
	}
	return decodeStrict(raw, dst)
}

// decodeOptionalJSON is decodeJSON for a body the request may leave out:
// with none (Content-Length 0), dst keeps what it holds.
func decodeOptionalJSON(c *gin.Context, dst any) error {
	if c.Request.ContentLength == 0 {
		return nil
	}
	return decodeJSON(c, dst)
}

// requireJSONContentType accepts application/json, with no parameter but
// charset=utf-8. Anything else, or none, is 415.
func requireJSONContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	ok := err == nil && mt == "application/json"
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			ok = false
		}
	}
	if !ok {
		return models.Errorf(models.CodeUnsupportedMediaType, "Content-Type must be application/json")
	}
	return nil
}

// decodeStrict decodes one already-read JSON value with decodeJSON's rules
// (all but the Content-Type, which belongs to the request).
func decodeStrict(raw []byte, dst any) error {
	if err := checkJSON(raw, reflect.TypeOf(dst)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	return nil
}

// checkJSON checks raw against the rules encoding/json does not enforce:
// valid UTF-8, one value and nothing after it, exact key names for the
// fields of typ, no duplicate keys, no NUL in strings, bounded nesting.
// Its errors name the field with its path (shipping_address.postal_code,
// items[2].quantity). Types are left to encoding/json.
func checkJSON(raw []byte, typ reflect.Type) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return models.Errorf(models.CodeInvalidRequest, "Request body is empty; a JSON object is required")
	}
	if !utf8.Valid(raw) {
		return models.Errorf(models.CodeInvalidRequest, "Request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	w := jsonWalker{dec: dec, raw: raw}
	if err := w.value(typ, "", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return models.Errorf(models.CodeInvalidRequest, "Request body must be a single JSON object")
	}
	return nil
}

type jsonWalker struct {
	dec *json.Decoder
	raw []byte // what dec reads
}

// token reads the next token, and says whether it is a string whose
// literal escapes a lone surrogate. encoding/json decodes one to U+FFFD,
// so only such strings are looked at in the raw body: from where the
// previous token ended to where this one ends.
func (w jsonWalker) token() (json.Token, bool, error) {
	start := w.dec.InputOffset()
	tok, err := w.dec.Token()
	s, isString := tok.(string)
	lone := err == nil && isString && strings.ContainsRune(s, utf8.RuneError) &&
		loneSurrogate(w.raw[start:w.dec.InputOffset()])
	return tok, lone, err
}

// loneSurrogate reports whether the JSON text lit (one string literal,
// after separators and spaces, which hold no backslash) has a \u escape of
// a high surrogate not followed at once by an escaped low one, or of a low
// surrogate alone.
func loneSurrogate(lit []byte) bool {
	for i := 0; i < len(lit); i++ {
		if lit[i] != '\\' {
			continue
		}
		i++ // the escaped character
		if i >= len(lit) || lit[i] != 'u' {
			continue
		}
		r := hexRune(lit[i+1:])
		i += 4 // at the escape's last digit
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if i+6 < len(lit) && lit[i+1] == '\\' && lit[i+2] == 'u' {
				if low := hexRune(lit[i+3:]); low >= 0xDC00 && low < 0xE000 {
					i += 6
					continue
				}
			}
			return true
		case r >= 0xDC00 && r < 0xE000:
			return true
		}
	}
	return false
}

// hexRune reads the four hex digits b starts with; -1 if it does not.
func hexRune(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 32)
	if err != nil {
		return -1
	}
	return rune(v)
}

// value reads one JSON value, expected to decode into typ (nil: anything).
func (w jsonWalker) value(typ reflect.Type, path string, depth int) (err error) {
	if depth > maxJSONDepth {
		return models.Errorf(models.CodeInvalidRequest, "Request body nests deeper than %d levels", maxJSONDepth)
	}
	tok, lone, err := w.token()
	if err != nil {
		return jsonError(err)
	}
	if lone {
		return invalid(path, "%s has an escaped half of a UTF-16 surrogate pair (\\ud800 to \\udfff) without the other half, which is no character", orBody(path))
	}
	typ = concrete(typ)
	// A string expected and something else given: said here with the
	// path, since encoding/json names only the map, not the key, for a
	// map's value (metadata.note). Said once the value is read, so the
	// rules above (depth, NUL, duplicates) inside it come first.
	if typ != nil && typ.Kind() == reflect.String && typ != jsonNumberType {
		if _, isString := tok.(string); !isString && tok != nil {
			defer func() {
				if err == nil {
					err = invalid(path, "%s must be a string", orBody(path))
				}
			}()
		}
	}
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '[' {
			var elem reflect.Type
			if typ != nil && (typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array) && !isRawJSON(typ) {
				elem = typ.Elem()
			}
			for i := 0; w.dec.More(); i++ {
				if err := w.value(elem, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
					return err
				}
			}
			_, err := w.dec.Token()
			return jsonError(err)
		}
		seen := map[string]bool{}
		for w.dec.More() {
			kt, lone, err := w.token()
			if err != nil {
				return jsonError(err)
			}
			key, _ := kt.(string)
			field := joinPath(path, key)
			if strings.IndexByte(key, 0) >= 0 {
				return invalid(path, "%s has a key containing a NUL character", orBody(path))
			}
			if lone {
				return invalid(path, "%s has a key with an escaped half of a UTF-16 surrogate pair without the other half", orBody(path))
			}
			if seen[key] {
				return invalid(field, "%s is given twice", field)
			}
			seen[key] = true
			ft, known := fieldType(typ, key)
			if !known {
				return unknownField(typ, field, key)
			}
			if err := w.value(ft, field, depth+1); err != nil {
				return err
			}
		}
		_, err := w.dec.Token()
		return jsonError(err)
	case string:
		if strings.IndexByte(tok, 0) >= 0 {
			return invalid(path, "%s must not contain a NUL character", orBody(path))
		}
	}
	return nil
}

func orBody(path string) string {
	if path == "" {
		return "Request body"
	}
	return path
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// concrete strips pointers; nil stays nil.
func concrete(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	jsonNumberType = reflect.TypeFor[json.Number]()
)

func isRawJSON(t reflect.Type) bool { return t == rawMessageType }

// fieldType returns the type a key of an object decoding into t holds,
// and whether t has such a key. Only structs restrict keys; maps and
// untyped values (nil, interfaces, json.RawMessage) take any key.
func fieldType(t reflect.Type, key string) (reflect.Type, bool) {
	if t == nil || t.Kind() != reflect.Struct {
		if t != nil && t.Kind() == reflect.Map {
			return t.Elem(), true
		}
		return nil, true
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, ok := jsonName(f)
		if !ok {
			if f.Anonymous {
				if ft, known := fieldType(concrete(f.Type), key); known && concrete(f.Type).Kind() == reflect.Struct {
					return ft, true
				}
			}
			continue
		}
		if name == key {
			return f.Type, true
		}
	}
	return nil, false
}

// jsonName is the key encoding/json uses for f; ok is false for fields it
// skips, and for untagged embedded structs (whose fields are promoted).
func jsonName(f reflect.StructField) (string, bool) {
	if !f.IsExported() && !f.Anonymous {
		return "", false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		if f.Anonymous && concrete(f.Type).Kind() == reflect.Struct {
			return "", false
		}
		name = f.Name
	}
	return name, true
}

// unknownField names the key; a key that differs from a known one only in
// case says so, since encoding/json would have accepted it.
func unknownField(t reflect.Type, field, key string) error {
	for i := 0; i < t.NumField(); i++ {
		if name, ok := jsonName(t.Field(i)); ok && strings.EqualFold(name, key) {
			return models.FieldError(models.CodeInvalidRequest, field, "Unknown field %q (names are case-sensitive: did you mean %q?)", field, name)
		}
	}
	return models.FieldError(models.CodeInvalidRequest, field, "Unknown field %q", field)
}

func jsonError(err error) error {
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
		maxErr    *http.MaxBytesError
	)
	switch {
	case err == nil:
		return nil
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

// jsonContentType is the Content-Type of every JSON answer.
const jsonContentType = "application/json; charset=utf-8"

// render answers v as JSON with status. It is the one way the API writes
// a JSON body (handlers, the error writer abort, and through the kept
// bytes the idempotent replays), so every answer has the same form:
// encoding/json's Encoder output, which ends with a newline as the
// line-oriented tools clients pipe answers into expect, with <, > and &
// left as they are (product titles and URLs stay readable).
func render(c *gin.Context, status int, v any) {
	b, err := encodeJSON(v)
	if err != nil {
		// A type the encoder cannot take is a bug in the handler. The
		// error body abort renders is strings only: it always encodes.
		abort(c, fmt.Errorf("encoding the answer: %w", err))
		return
	}
	c.Data(status, jsonContentType, b)
}

// encodeJSON is render's encoding: one JSON value and a newline.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// listError is the error of a list's read: a cursor that names none of
// the key's things in its mode (notFound) is the request's fault, named
// by its parameter; any other error is as it was.
func listError(err, notFound error, cursor, things string) error {
	if errors.Is(err, notFound) {
		return invalid(cursor, "%s must be the id of one of your %s (in this mode)", cursor, things)
	}
	return err
}

// listJSON is a page of a list endpoint: its items, newest first, and
// whether more follow.
type listJSON[T any] struct {
	Data    []T  `json:"data"`
	HasMore bool `json:"has_more"`
}

// each is f of every element of xs, in order: an empty xs gives an empty
// list (JSON []), never null.
func each[T, J any](xs []T, f func(T) J) []J {
	out := make([]J, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}
