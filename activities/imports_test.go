package activities

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNoAdapter: the activities declare the ports they use in the
// domain's terms, and the adapters (activities/stellar/payout, the
// sandbox, a marketplace) implement them; so this package imports no
// package of this module but models, and a new rail or provider needs no
// change here.
func TestImportsNoAdapter(t *testing.T) {
	const module = "github.com/memocart/memocart/"
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, module) && path != module+"models" {
				t.Errorf("%s imports %s: declare the port here, in the domain's terms, and let that package implement it", name, path)
			}
		}
	}
}
