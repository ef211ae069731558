// Command layering measures how the files of one package build on each other: a
// reference runs against the layering when a file uses a name that another file
// defines while that file uses a name of the first (the two build on each other, so
// neither can be read first). Issue 56 holds the root package under 50 such
// references; the test of this package fails above that.
//
//	go run ./tools/layering            # the root package: each pair, and the names each way
//	go run ./tools/layering -dir httpapi
//
// Names are resolved by go/types over the package's non-test files: package-level
// names, methods and struct fields count; what a file defines and uses itself does not,
// nor a name reached only through another package's types (those are imported empty).
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	dir := flag.String("dir", ".", "the package's directory")
	flag.Parse()
	g, err := read(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "layering:", err)
		os.Exit(1)
	}
	g.print(os.Stdout)
}

// graph maps a file to the files whose names it uses, each with those names.
type graph map[string]map[string]map[string]bool

// read builds the graph of the package in dir.
func read(dir string) (graph, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		return nil, err
	}
	if len(pkgs) != 1 {
		return nil, fmt.Errorf("%s holds %d packages besides tests, want 1", dir, len(pkgs))
	}
	var files []*ast.File
	var name string
	for n, p := range pkgs {
		name = n
		for _, f := range p.Files {
			files = append(files, f)
		}
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	// Other packages are imported empty: only the package's own names are measured, and
	// type-checking the module's dependencies from source would take minutes.
	conf := types.Config{Importer: emptyImporter{}, Error: func(error) {}}
	pkg, _ := conf.Check(name, fset, files, info)
	g := graph{}
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() || local(obj) {
			continue
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		def := filepath.Base(fset.Position(obj.Pos()).Filename)
		if from == def {
			continue
		}
		if g[from] == nil {
			g[from] = map[string]map[string]bool{}
		}
		if g[from][def] == nil {
			g[from][def] = map[string]bool{}
		}
		g[from][def][obj.Name()] = true
	}
	return g, nil
}

// emptyImporter imports every package as an empty one.
type emptyImporter struct{}

func (emptyImporter) Import(path string) (*types.Package, error) {
	p := types.NewPackage(path, filepath.Base(path))
	p.MarkComplete()
	return p, nil
}

// local reports a variable declared inside a function (a parameter, a result, a
// local): not a name another file could define.
func local(obj types.Object) bool {
	v, ok := obj.(*types.Var)
	return ok && !v.IsField() && obj.Parent() != obj.Pkg().Scope()
}

// against returns the references that run against the layering, as pairs of files
// that use each other (a before b), in order.
func (g graph) against() [][2]string {
	var pairs [][2]string
	for _, a := range slices.Sorted(maps.Keys(g)) {
		for _, b := range slices.Sorted(maps.Keys(g[a])) {
			if a < b && g[b][a] != nil {
				pairs = append(pairs, [2]string{a, b})
			}
		}
	}
	return pairs
}

func (g graph) print(w io.Writer) {
	pairs := g.against()
	for _, p := range pairs {
		fmt.Fprintf(w, "%s <-> %s\n  %s uses %s\n  %s uses %s\n", p[0], p[1],
			p[0], strings.Join(slices.Sorted(maps.Keys(g[p[0]][p[1]])), " "),
			p[1], strings.Join(slices.Sorted(maps.Keys(g[p[1]][p[0]])), " "))
	}
	fmt.Fprintf(w, "%d pairs of files that use each other: %d references against the layering\n", len(pairs), 2*len(pairs))
}
