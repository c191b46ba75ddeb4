package main

import (
	"os"
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
