package ui

import (
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
)

// Lang is one entry of the language select: Name is the value to post (a
// canonical chroma lexer name, "" for plain text) and Label is what the
// user sees.
type Lang struct {
	Name  string
	Label string
}

// plainLabel is the label of the empty language.
const plainLabel = "plain text"

// plainNames are the names that mean "no highlighting". They map to "" so
// that a plain paste stores no language at all.
var plainNames = []string{"", "plaintext", "text", "plain", "no-highlight", "txt", "none"}

// langIndex is built once from chroma's registry: every lexer's name and
// aliases, lowercased, to the lexer.
type langIndex struct {
	byKey map[string]chroma.Lexer
	list  []Lang
}

var langs = sync.OnceValue(func() *langIndex {
	idx := &langIndex{byKey: map[string]chroma.Lexer{}}
	var list []Lang
	all := lexers.GlobalLexerRegistry.Lexers
	// Names first, then aliases, so that an alias never shadows another
	// lexer's name.
	for _, l := range all {
		cfg := l.Config()
		if cfg.Name == "plaintext" || cfg.Name == "fallback" {
			continue
		}
		key := strings.ToLower(cfg.Name)
		if _, dup := idx.byKey[key]; !dup {
			idx.byKey[key] = l
			list = append(list, Lang{Name: cfg.Name, Label: cfg.Name})
		}
	}
	for _, l := range all {
		cfg := l.Config()
		if cfg.Name == "plaintext" || cfg.Name == "fallback" {
			continue
		}
		for _, a := range cfg.Aliases {
			if key := strings.ToLower(a); idx.byKey[key] == nil {
				idx.byKey[key] = l
			}
		}
	}
	for _, n := range plainNames {
		idx.byKey[n] = nil
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := strings.ToLower(list[i].Label), strings.ToLower(list[j].Label)
		if a != b {
			return a < b
		}
		return list[i].Label < list[j].Label
	})
	idx.list = append([]Lang{{Name: "", Label: plainLabel}}, list...)
	return idx
})

// Langs returns the languages the form offers, sorted by label, with plain
// text (Name "") first. The caller may keep the slice; it is a copy.
func Langs() []Lang {
	return append([]Lang(nil), langs().list...)
}

// LookupLang resolves a language name or alias, in any case, to its
// canonical chroma lexer name: "go" and "golang" give "Go", "py" gives
// "Python". The plain-text names ("", "text", "plain", "plaintext", ...)
// give "" and true. The old Rust pastebin's Prism names resolve through
// prismLangs ("markup" gives "HTML"). An unknown name gives false.
func LookupLang(name string) (canonical string, ok bool) {
	key := strings.ToLower(strings.TrimSpace(name))
	l, ok := langs().byKey[key]
	if !ok {
		// The old Rust pastebin's Prism names, for its users' scripts.
		prism, known := prismLangs[key]
		if !known {
			return "", false
		}
		l = langs().byKey[strings.ToLower(prism)]
	}
	if l == nil {
		return "", true
	}
	return l.Config().Name, true
}

// LangOfFile is the language of a file called name, by chroma's own file
// name patterns: "main.go" gives "Go", "Makefile" gives "Makefile". Plain
// text, and a name that no pattern matches, give "". The new-paste form
// asks for it when it is given a file.
func LangOfFile(name string) string {
	l := lexers.Match(name)
	if l == nil {
		return ""
	}
	lang, _ := LookupLang(l.Config().Name)
	return lang
}

// lexerFor returns the lexer of a canonical language name, or nil for plain
// text and for names it does not know.
func lexerFor(lang string) chroma.Lexer {
	return langs().byKey[strings.ToLower(lang)]
}

// langLabel is the label shown for a stored language.
func langLabel(lang string) string {
	if l := lexerFor(lang); l != nil {
		return l.Config().Name
	}
	return plainLabel
}

// fileExt returns the usual file extension of a language, with its dot, for
// download names: ".go" for Go, ".txt" when the lexer names no plain
// "*.ext" pattern.
func fileExt(lang string) string {
	if l := lexerFor(lang); l != nil {
		for _, glob := range l.Config().Filenames {
			ext := path.Ext(glob)
			if strings.HasPrefix(glob, "*.") && glob == "*"+ext && !strings.ContainsAny(ext, "*?[") {
				return ext
			}
		}
	}
	return ".txt"
}
