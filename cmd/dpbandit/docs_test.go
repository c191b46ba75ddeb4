package main

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocs: the README stays short and its links resolve; no document
// links outside the repository; the bibliography names the five papers
// that the code cites as 000 to 004.
func TestDocs(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 300 {
		t.Errorf("README.md has %d lines; keep it under 300 and move detail to docs/", n)
	}
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"))
	link := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`)
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.HasPrefix(target, "http") {
				continue
			}
			if strings.Contains(target, "../") {
				t.Errorf("%s links outside its folder: %s", p, target)
			}
			path := filepath.Join(filepath.Dir(p), target)
			if strings.HasPrefix(target, "/") {
				path = filepath.Join(root, target)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist", p, target)
			}
		}
		for _, outside := range []string{"../shared", "shared/seeds", "shared/DESIGN", "shared/ALGORITHMS"} {
			if strings.Contains(string(b), outside) {
				t.Errorf("%s refers to %s, outside the repository", p, outside)
			}
		}
	}
	bib, err := os.ReadFile(filepath.Join(root, "docs", "bibliography.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cite := range []string{"| 000 |", "| 001 |", "| 002 |", "| 003 |", "| 004 |"} {
		if !strings.Contains(string(bib), cite) {
			t.Errorf("the bibliography lacks %s", cite)
		}
	}
}

// TestPackageMapOrder: the README's map of the packages lists them so
// that no package imports one on a line above it (what its text says; a
// new user found audit and loadgen listed below what they import).
func TestPackageMapOrder(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "\ncmd/dpbandit/")
	end := strings.Index(text[start+1:], "```")
	if start < 0 || end < 0 {
		t.Fatal("the README's package map is not found")
	}
	line := map[string]int{} // package directory -> line of the map
	for i, l := range strings.Split(text[start+1:start+1+end], "\n") {
		for _, f := range strings.Fields(l) {
			if !strings.HasSuffix(f, "/") {
				break
			}
			line[strings.TrimSuffix(f, "/")] = i
		}
	}
	lineOf := func(pkg string) (int, bool) {
		for p := pkg; p != "."; p = filepath.Dir(p) {
			if n, ok := line[p]; ok {
				return n, true
			}
		}
		return 0, false
	}
	const module = "github.com/dpbandit/dpbandit/"
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		if strings.HasPrefix(rel, "deploy") || strings.HasPrefix(rel, "bench") {
			return nil
		}
		from, ok := lineOf(rel)
		if !ok {
			t.Errorf("package %s is not in the README's map", rel)
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			p := strings.Trim(im.Path.Value, `"`)
			if !strings.HasPrefix(p, module) {
				continue
			}
			if to, ok := lineOf(strings.TrimPrefix(p, module)); ok && to < from {
				t.Errorf("%s (line %d of the map) imports %s, listed above it (line %d)", rel, from, p, to)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadmeProgram: the README's Go program compiles as shown (it is
// built as a package of the module, through an overlay: nothing is
// written into the tree).
func TestReadmeProgram(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "\n```go\n")
	program, _, closed := strings.Cut(rest, "\n```\n")
	if !ok || !closed || !strings.HasPrefix(program, "package main\n") {
		t.Fatal("the README's Go block is not found, or is not a whole program (package main)")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(program+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(abs, "internal", "readmeprogram", "main.go"): src}})
	if err := os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", os.DevNull, "./internal/readmeprogram")
	cmd.Dir = abs
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the README's program does not build: %v\n%s", err, out)
	}
}
