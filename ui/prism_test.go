package ui

import (
	"strings"
	"testing"

	"github.com/alecthomas/chroma/v2/lexers"
)

// oldSelector is every value of the language <select> of the old Rust
// pastebin (mkaczanowski/pastebin, static/index.html), in its order.
const oldSelector = `markup css clike javascript abap actionscript ada apacheconf apl
applescript arduino arff asciidoc asm6502 aspnet autohotkey autoit bash
basic batch bison brainfuck bro c csharp cpp coffeescript clojure crystal
csp css-extras d dart diff django docker eiffel elixir elm erb erlang
fsharp flow fortran gedcom gherkin git glsl gml go graphql groovy haml
handlebars haskell haxe http hpkp hsts ichigojam icon inform7 ini io j java
jolie json julia keyman kotlin latex less liquid lisp livescript lolcode
lua makefile markdown markup-templating matlab mel mizar monkey n4js nasm
nginx nim nix nsis objectivec ocaml opencl oz parigp parser pascal perl php
php-extras plsql powershell processing prolog properties protobuf pug
puppet pure python q qore r jsx tsx renpy reason rest rip roboconf ruby
rust sas sass scss scala scheme smalltalk smarty sql soy stylus swift tap
tcl textile tt2 twig typescript vbnet velocity verilog vhdl vim
visual-basic wasm wiki xeora xojo xquery yaml`

func TestPrismNamesResolve(t *testing.T) {
	ids := strings.Fields(oldSelector)
	if len(ids) != 152 {
		t.Fatalf("the old selector has %d ids, want 152", len(ids))
	}
	for _, id := range ids {
		got, ok := LookupLang(id)
		if !ok || got == "" {
			t.Errorf("LookupLang(%q) = %q, %v; want a chroma lexer", id, got, ok)
			continue
		}
		if lexers.Get(got) == nil || lexerFor(got) == nil {
			t.Errorf("LookupLang(%q) = %q, which is no chroma lexer", id, got)
		}
		if want := prismLangs[id]; got != want {
			t.Errorf("LookupLang(%q) = %q; the table says %q", id, got, want)
		}
	}
	if len(prismLangs) != len(ids) {
		t.Errorf("the table has %d names, the old selector %d", len(prismLangs), len(ids))
	}
}

func TestPrismExamples(t *testing.T) {
	for in, want := range map[string]string{
		"markup": "HTML", "clike": "C", "git": "Diff", "less": "SCSS",
		"pascal": "ObjectPascal", "plsql": "PL/pgSQL", "wasm": "WebAssembly Text Format",
		"xquery": "XML", "MARKUP": "HTML",
	} {
		if got, ok := LookupLang(in); !ok || got != want {
			t.Errorf("LookupLang(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := LookupLang("nobodys-language"); ok {
		t.Error("an unknown name resolved")
	}
}
