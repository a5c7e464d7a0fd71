package ui

import (
	"bytes"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;]*m")

func TestTerminal(t *testing.T) {
	u, err := New(Options{MaxHighlightBytes: 200})
	if err != nil {
		t.Fatal(err)
	}
	code := "package main\n\nfunc main() { println(\"hi\") }\n"
	big := strings.Repeat("x := 1\n", 40)
	tests := []struct {
		name       string
		p          Paste
		lang, fmt  string
		wantEscape string // a sequence the output must hold; "" for none at all
	}{
		{"256 colours", Paste{Content: []byte(code), Lang: "Go"}, "", "ansi", "\x1b[38;5;"},
		{"16 colours", Paste{Content: []byte(code), Lang: "Go"}, "", "ansi16", "\x1b[9"},
		{"true colour", Paste{Content: []byte(code), Lang: "Go"}, "", "truecolor", "\x1b[38;2;"},
		{"lang override", Paste{Content: []byte(code)}, "go", "ansi", "\x1b[38;5;"},
		{"over the size budget", Paste{Content: []byte(big), Lang: "Go"}, "", "ansi", ""},
		{"encrypted", Paste{Content: []byte("pn1.k.abc.def"), Lang: "Go", Encrypted: true}, "", "ansi", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := u.Terminal(&b, tt.p, tt.lang, tt.fmt); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if plain := ansiEscape.ReplaceAllString(out, ""); plain != string(tt.p.Content) {
				t.Errorf("without its escapes the output is %q, want the paste %q", plain, tt.p.Content)
			}
			// "Keyword" colours differ from plain text: highlighted output has
			// more than one distinct colour; unhighlighted has at most one.
			colours := map[string]bool{}
			for _, e := range ansiEscape.FindAllString(out, -1) {
				if e != "\x1b[0m" {
					colours[e] = true
				}
			}
			if tt.wantEscape == "" {
				if len(colours) > 1 {
					t.Errorf("got %d colours, want plain output: %q", len(colours), out)
				}
				return
			}
			if !strings.Contains(out, tt.wantEscape) || len(colours) < 2 {
				t.Errorf("got %q, want it highlighted with %q", out, tt.wantEscape)
			}
		})
	}
}

func TestTerminalFormat(t *testing.T) {
	tests := []struct {
		url, accept   string
		want          string
		ok, wantKnown bool
	}{
		{"/x", "", "", false, false},
		{"/x", "text/html", "", false, false},
		{"/x?fmt=ansi", "", "ansi", true, true},
		{"/x?fmt=truecolor", "", "truecolor", true, true},
		{"/x?fmt=ansi16", "text/html", "ansi16", true, true},
		{"/x?fmt=sixel", "", "sixel", true, false},
		{"/x", "text/plain;q=0.5, text/x-ansi", "ansi", true, true},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", tt.url, nil)
		if tt.accept != "" {
			r.Header.Set("Accept", tt.accept)
		}
		got, ok, known := TerminalFormat(r)
		if got != tt.want || ok != tt.ok || known != tt.wantKnown {
			t.Errorf("%s (Accept %q): got %q, %v, %v; want %q, %v, %v", tt.url, tt.accept, got, ok, known, tt.want, tt.ok, tt.wantKnown)
		}
	}
}
