package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxAgainst is issue 56's bar: fewer than 50 references against the layering in the
// root package.
const maxAgainst = 50

func TestRootLayering(t *testing.T) {
	g, err := read("../..")
	if err != nil {
		t.Fatal(err)
	}
	if n := 2 * len(g.against()); n >= maxAgainst {
		var b strings.Builder
		g.print(&b)
		t.Fatalf("the root package has %d references against its layering, want fewer than %d:\n%s", n, maxAgainst, b.String())
	}
}

// TestAgainstCountsFilesThatUseEachOther holds the measure itself on a package of
// three files: a and b use each other, c builds on a alone.
func TestAgainstCountsFilesThatUseEachOther(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.go", "package p\n\ntype A struct{}\n\nfunc (A) Use() B { return B{} }\n")
	write(t, dir, "b.go", "package p\n\ntype B struct{ a A }\n")
	write(t, dir, "c.go", "package p\n\nvar c = A{}\n")
	g, err := read(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := g.against()
	if len(got) != 1 || got[0] != [2]string{"a.go", "b.go"} {
		t.Fatalf("against = %v, want [[a.go b.go]]", got)
	}
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
