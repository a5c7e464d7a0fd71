package pastenode_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The code map's rules (README, "Code map"), checked over every Go file of
// the module so that they stay true.
const (
	maxFileLines = 600
	maxFuncLines = 70 // outside tests
)

// goFile is one parsed Go file of the module.
type goFile struct {
	path string
	test bool
	ast  *ast.File
}

// moduleFiles parses every Go file of the module, test files included.
func moduleFiles(t *testing.T) (*token.FileSet, []goFile) {
	t.Helper()
	fset := token.NewFileSet()
	var files []goFile
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		files = append(files, goFile{path: path, test: strings.HasSuffix(path, "_test.go"), ast: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fset, files
}

func TestCodeMapSizes(t *testing.T) {
	fset, files := moduleFiles(t)
	for _, f := range files {
		if n := fset.File(f.ast.Pos()).LineCount(); n > maxFileLines {
			t.Errorf("%s: %d lines, more than %d: split it by topic", f.path, n, maxFileLines)
		}
		if f.test {
			continue
		}
		for _, decl := range f.ast.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if lines > maxFuncLines {
				t.Errorf("%s: func %s is %d lines, more than %d", fset.Position(fn.Pos()), fn.Name.Name, lines, maxFuncLines)
			}
		}
	}
}

func TestCodeMapPackageComments(t *testing.T) {
	_, files := moduleFiles(t)
	documented := map[string]bool{} // directory -> has a package comment
	for _, f := range files {
		if f.test {
			continue
		}
		dir := filepath.Dir(f.path)
		documented[dir] = documented[dir] || f.ast.Doc != nil
	}
	for dir, ok := range documented {
		if !ok {
			t.Errorf("the package in %s has no package comment", dir)
		}
	}
}

// TestCodeMapCommands keeps node the one place that turns a request into a
// replicated command: outside node, fsm and tests nothing builds an
// fsm.Command.
func TestCodeMapCommands(t *testing.T) {
	fset, files := moduleFiles(t)
	for _, f := range files {
		if dir := filepath.Dir(f.path); f.test || dir == "node" || dir == "fsm" {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if sel, ok := lit.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Command" {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "fsm" {
					t.Errorf("%s: builds an fsm.Command; ask node for it instead", fset.Position(lit.Pos()))
				}
			}
			return true
		})
	}
}

// allowedImports is the code map's import graph: which of the module's
// packages each package may import, outside tests. Imports run one way,
// from cmd down to fsm and the leaves; a new package, or an import
// upwards or sideways, must be added here on purpose (and to the README's
// code map). "" is the root package of wire types.
var allowedImports = map[string][]string{
	"":                   nil,
	"cdb":                nil,
	"fsm":                nil,
	"pn1":                nil,
	"internal/freeport":  nil,
	"internal/buildinfo": nil,
	"internal/httpx":     {"", "fsm"},
	"node":               {"", "fsm"},
	"cluster":            {"", "fsm", "node"},
	"ui":                 {"", "fsm"},
	"mirror":             {"", "cdb", "fsm", "internal/httpx", "ui"},
	"api":                {"", "cluster", "fsm", "internal/httpx", "mirror", "node", "ui"},
	"client":             {""},
	"cmd/pastenode":      {"", "api", "cluster", "internal/buildinfo", "mirror", "node", "ui"},
	"cmd/pastectl":       {"", "client", "internal/buildinfo", "pn1"},
}

// TestCodeMapImports checks every import of the module's own packages
// against allowedImports. The benchmark and end-to-end programs under
// bench/ and test/ may import anything.
func TestCodeMapImports(t *testing.T) {
	const module = "github.com/pastenode/pastenode"
	fset, files := moduleFiles(t)
	for _, f := range files {
		dir := filepath.ToSlash(filepath.Dir(f.path))
		if f.test || strings.HasPrefix(dir, "bench/") || strings.HasPrefix(dir, "test/") {
			continue
		}
		if dir == "." {
			dir = ""
		}
		allowed, known := allowedImports[dir]
		for _, imp := range f.ast.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if path != module && !strings.HasPrefix(path, module+"/") {
				continue
			}
			to := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
			switch {
			case !known:
				t.Errorf("%s: package %q imports %q but is not in allowedImports", fset.Position(imp.Pos()), dir, to)
			case !slices.Contains(allowed, to):
				t.Errorf("%s: %q may not import %q (allowedImports)", fset.Position(imp.Pos()), dir, to)
			}
		}
	}
}
