package api_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/memocart/memocart/models"
)

// The prose reference (docs/api.md, docs/webhooks.md) and the OpenAPI
// document are written by hand, side by side. These tests hold them to each
// other, so a route or an error code added to one and not the other fails
// `make test` instead of surprising a client.

// apiDocs are the pages that together must name every operation of the
// OpenAPI document and list its error codes.
var apiDocs = []string{"../docs/api.md", "../docs/webhooks.md"}

// docOperation is a route as prose names it: "GET /v1/orders/{id_or_number}".
var docOperation = regexp.MustCompile("\\b(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) +(/[^\\s`'\"()|,;?*<>\\[\\]]*)")

// docStatusCode is an error named with its status in prose: "409 order_not_cancellable".
var docStatusCode = regexp.MustCompile("\\b([1-5][0-9][0-9]) +`?([a-z]+(?:_[a-z]+)+)`?")

// errorTableRow is a row of an error table: "| `code` | 404 | ...".
var errorTableRow = regexp.MustCompile("^\\| `([a-z_]+)` \\| ([1-5][0-9][0-9]) \\|")

// openAPIDoc is the part of api/openapi.json these tests read.
type openAPIDoc struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]struct {
			Enum        []string `json:"enum"`
			Description string   `json:"description"`
		} `json:"schemas"`
	} `json:"components"`
}

func readOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc openAPIDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if len(doc.Paths) == 0 {
		t.Fatal("openapi.json has no paths")
	}
	return doc
}

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// operation is a method and a path. path has its parameters as "{}": their
// names differ between pages ({id}, {id_or_number}) and do not change the
// route; shown is the path as written.
type operation struct {
	method string
	path   string
	shown  string
}

func (o operation) String() string { return o.method + " " + o.shown }

var pathParam = regexp.MustCompile(`\{[^}/]*\}`)

func newOperation(method, path string) operation {
	path = strings.TrimRight(path, ".:")
	return operation{method: strings.ToUpper(method), path: pathParam.ReplaceAllString(path, "{}"), shown: path}
}

// matches reports whether a route named in prose is the document's
// operation o: same method and segments, a "{}" of the document matching
// any one segment (a parameter, or an example value).
func (o operation) matches(named operation) bool {
	if o.method != named.method {
		return false
	}
	want, got := strings.Split(o.path, "/"), strings.Split(named.path, "/")
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		if want[i] != got[i] && (want[i] != "{}" || got[i] == "") {
			return false
		}
	}
	return true
}

// operations returns the document's operations, sorted.
func (d openAPIDoc) operations() []operation {
	methods := map[string]bool{"get": true, "post": true, "put": true, "patch": true, "delete": true, "head": true, "options": true}
	var ops []operation
	for path, item := range d.Paths {
		for m := range item {
			if methods[m] {
				ops = append(ops, newOperation(m, path))
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].String() < ops[j].String() })
	return ops
}

// namedOperations returns every route the text names, as "METHOD /path".
func namedOperations(text string) []operation {
	var ops []operation
	for _, m := range docOperation.FindAllStringSubmatch(text, -1) {
		ops = append(ops, newOperation(m[1], m[2]))
	}
	return ops
}

// TestDocsNameEveryOperation fails when an operation of openapi.json is
// named neither in docs/api.md nor in docs/webhooks.md.
func TestDocsNameEveryOperation(t *testing.T) {
	doc := readOpenAPI(t)
	var named []operation
	for _, p := range apiDocs {
		named = append(named, namedOperations(readDoc(t, p))...)
	}
	for _, op := range doc.operations() {
		found := false
		for _, n := range named {
			if op.matches(n) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("openapi.json has %s, which neither docs/api.md nor docs/webhooks.md names (write it as `%s`)", op, op)
		}
	}
}

// TestDocsNameOnlyDocumentedRoutes fails when the README or a page under
// docs/ names a `METHOD /v1/...` route that openapi.json does not have.
func TestDocsNameOnlyDocumentedRoutes(t *testing.T) {
	ops := readOpenAPI(t).operations()
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../README.md")
	for _, p := range pages {
		for _, n := range namedOperations(readDoc(t, p)) {
			if !strings.HasPrefix(n.path, "/v1/") {
				continue
			}
			found := false
			for _, op := range ops {
				if op.matches(n) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s names %s, which openapi.json does not have", filepath.Base(p), n)
			}
		}
	}
}

// errorTable returns the code → HTTP status rows of the first table in
// text whose header starts "| Code | HTTP |".
func errorTable(t *testing.T, name, text string) map[string]int {
	t.Helper()
	rows := map[string]int{}
	in := false
	for line := range strings.SplitSeq(text, "\n") {
		switch {
		case !in && strings.HasPrefix(line, "| Code | HTTP |"):
			in = true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "|"):
			m := errorTableRow.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("%s: an error table row that is not | `code` | status |: %q", name, line)
				continue
			}
			status, _ := strconv.Atoi(m[2])
			if _, dup := rows[m[1]]; dup {
				t.Errorf("%s: %s is listed twice", name, m[1])
			}
			rows[m[1]] = status
		case in:
			return rows
		}
	}
	return rows
}

// TestDocsListTheErrorCodes fails when the error table of docs/api.md does
// not list exactly the codes openapi.json enumerates (ErrorCode), or gives
// one a status other than the document's, or when docs/api.md or
// docs/webhooks.md names a "<status> <code>" the document does not have.
func TestDocsListTheErrorCodes(t *testing.T) {
	schema, ok := readOpenAPI(t).Components.Schemas["ErrorCode"]
	if !ok || len(schema.Enum) == 0 {
		t.Fatal("openapi.json has no ErrorCode enum in components.schemas")
	}
	// The document's own table (in ErrorCode's description) gives each
	// code its status.
	docStatus := map[string]int{}
	for line := range strings.SplitSeq(schema.Description, "\n") {
		if m := errorTableRow.FindStringSubmatch(line); m != nil {
			docStatus[m[1]], _ = strconv.Atoi(m[2])
		}
	}
	enum := map[string]bool{}
	for _, c := range schema.Enum {
		enum[c] = true
	}

	listed := errorTable(t, "docs/api.md", readDoc(t, "../docs/api.md"))
	if len(listed) == 0 {
		t.Fatal(`docs/api.md has no error table ("| Code | HTTP | When |")`)
	}
	for _, c := range schema.Enum {
		if _, ok := listed[c]; !ok {
			t.Errorf("openapi.json enumerates the error code %s; docs/api.md's error table does not list it", c)
		}
	}
	for c, status := range listed {
		if !enum[c] {
			t.Errorf("docs/api.md lists the error code %s; openapi.json's ErrorCode does not enumerate it", c)
		}
		if want, ok := docStatus[c]; ok && want != status {
			t.Errorf("docs/api.md gives %s the status %d; openapi.json gives it %d", c, status, want)
		}
	}

	for _, p := range apiDocs {
		for _, m := range docStatusCode.FindAllStringSubmatch(readDoc(t, p), -1) {
			code := m[2]
			status, _ := strconv.Atoi(m[1])
			if !enum[code] {
				t.Errorf("%s names %q, but %s is not an error code of openapi.json", filepath.Base(p), m[0], code)
				continue
			}
			if want, ok := listed[code]; ok && want != status {
				t.Errorf("%s names %q, but the error table gives %s the status %d", filepath.Base(p), m[0], code, want)
			}
		}
	}
}

// docs/api.md's sandbox table lists exactly the fail test helper's
// reasons, each in backticks, in the row of the helper.
func TestDocsListTheTestFailureCodes(t *testing.T) {
	doc := readDoc(t, "../docs/api.md")
	i := strings.Index(doc, "| `POST /v1/test_helpers/orders/{id_or_number}/advance`, `…/fail` |")
	if i < 0 {
		t.Fatal("docs/api.md's sandbox table has no row for the advance and fail test helpers")
	}
	row := doc[i : i+strings.Index(doc[i:], "\n")]
	var listed []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(row[strings.Index(row, "sentence:"):], -1) {
		listed = append(listed, m[1])
	}
	listed = slices.DeleteFunc(listed, func(s string) bool { return s == "reason" })
	assert.Equal(t, models.TestFailureCodes(), listed)
}
