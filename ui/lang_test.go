package ui

import (
	"sort"
	"strings"
	"testing"
)

func TestLookupLang(t *testing.T) {
	tests := []struct {
		in     string
		want   string
		wantOK bool
	}{
		{"go", "Go", true},
		{"golang", "Go", true},
		{"Go", "Go", true},
		{"GO", "Go", true},
		{"Python", "Python", true},
		{"py", "Python", true},
		{"c++", "C++", true},
		{"js", "JavaScript", true},
		{"text", "", true},
		{"plain", "", true},
		{"plaintext", "", true},
		{"", "", true},
		{" go ", "Go", true},
		{"unknown-lang", "", false},
		{"*.go", "", false},
		{"main.go", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := LookupLang(tt.in)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("LookupLang(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestLangs(t *testing.T) {
	langs := Langs()
	if len(langs) < 100 {
		t.Fatalf("got %d languages, want chroma's", len(langs))
	}
	if langs[0] != (Lang{Name: "", Label: "plain text"}) {
		t.Errorf("first = %+v, want plain text", langs[0])
	}
	rest := langs[1:]
	if !sort.SliceIsSorted(rest, func(i, j int) bool {
		return strings.ToLower(rest[i].Label) < strings.ToLower(rest[j].Label)
	}) {
		t.Errorf("languages are not sorted by label")
	}
	seen := map[string]bool{}
	for _, l := range rest {
		if seen[l.Name] {
			t.Errorf("%q listed twice", l.Name)
		}
		seen[l.Name] = true
		// Every value the form posts must be accepted back as itself.
		if got, ok := LookupLang(l.Name); !ok || got != l.Name {
			t.Errorf("LookupLang(%q) = %q, %v; want itself", l.Name, got, ok)
		}
	}
	langs[0].Label = "changed"
	if Langs()[0].Label != "plain text" {
		t.Errorf("Langs returned shared state")
	}
}

func TestFileExt(t *testing.T) {
	tests := []struct{ lang, want string }{
		{"Go", ".go"},
		{"Python", ".py"},
		{"", ".txt"},
		{"no such language", ".txt"},
	}
	for _, tt := range tests {
		if got := fileExt(tt.lang); got != tt.want {
			t.Errorf("fileExt(%q) = %q, want %q", tt.lang, got, tt.want)
		}
	}
}

func TestLangOfFile(t *testing.T) {
	for name, want := range map[string]string{
		"main.go": "Go", "README.md": "markdown", "Makefile": "Makefile", "setup.py": "Python",
		"Dockerfile": "Docker", "notes.txt": "", "server.log": "", "": "", "dir/main.go": "Go",
	} {
		if got := LangOfFile(name); got != want {
			t.Errorf("LangOfFile(%q) = %q, want %q", name, got, want)
		}
		if got, ok := LookupLang(LangOfFile(name)); !ok || got != want {
			t.Errorf("LangOfFile(%q) is not a language the form offers", name)
		}
	}
}
