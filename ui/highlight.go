package ui

import (
	"bytes"
	"fmt"
	"html/template"
	"strconv"
	"strings"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/styles"
)

// Themes are the chroma styles of the two colour schemes.
const (
	lightTheme = "github"
	darkTheme  = "github-dark"
)

// renderLines turns text into the inside of the #paste element: one
// span.line per line, with id "L<n>", holding an empty link to itself (the
// style sheet draws the number with a CSS counter, so the numbers are never
// part of the text that is selected or copied) and the line's code. It
// returns the HTML and the number of lines.
//
// chroma's own HTML formatter puts the line numbers into the text of the
// element; this small writer keeps #paste's text equal to the paste.
//
// The lines are those of chroma.SplitTokensIntoLines, cut here as they are
// written rather than first collected as a slice of tokens per line: an
// export renders every paste, and those slices were much of the garbage
// of a plain one.
func renderLines(tokens []chroma.Token, size int) (template.HTML, int) {
	newlines := 0
	for _, tok := range tokens {
		newlines += strings.Count(tok.Value, "\n")
	}
	var b strings.Builder
	b.Grow(size + size/2 + 64*(newlines+1))
	var num []byte
	lines, open := 0, false
	for i, tok := range tokens {
		cls := tokenClass(tok.Type)
		for v := tok.Value; ; {
			piece, rest, more := strings.Cut(v, "\n")
			if more {
				piece = v[:len(piece)+1]
			} else if !open && v == "" && i == len(tokens)-1 {
				break // chroma drops a last line that is one empty token
			}
			if !open {
				lines++
				num = strconv.AppendInt(num[:0], int64(lines), 10)
				b.WriteString(`<span class="line" id="L`)
				b.Write(num)
				b.WriteString(`"><a class="ln" href="#L`)
				b.Write(num)
				b.WriteString(`"></a><span class="cl">`)
				open = true
			}
			writeToken(&b, cls, piece)
			if !more {
				break
			}
			b.WriteString("</span></span>")
			if open, v = false, rest; v == "" {
				break // chroma emits no empty tail after a newline
			}
		}
	}
	if open {
		b.WriteString("</span></span>")
	}
	return template.HTML(b.String()), lines
}

// writeToken writes the text of a token, escaped, in a span of its CSS
// class if it has one.
func writeToken(b *strings.Builder, cls, text string) {
	if cls == "" {
		htmlEscaper.WriteString(b, text)
		return
	}
	b.WriteString(`<span class="`)
	b.WriteString(cls)
	b.WriteString(`">`)
	htmlEscaper.WriteString(b, text)
	b.WriteString(`</span>`)
}

// htmlEscaper escapes text as html.EscapeString does, but writes it out
// rather than building a string for each token.
var htmlEscaper = strings.NewReplacer(`&`, "&amp;", `'`, "&#39;", `<`, "&lt;", `>`, "&gt;", `"`, "&#34;")

// tokenClass is the CSS class chroma gives a token type: its own, or the
// nearest parent's.
func tokenClass(t chroma.TokenType) string {
	for ; t != 0; t = t.Parent() {
		if cls, ok := chroma.StandardTypes[t]; ok {
			return cls
		}
	}
	return chroma.StandardTypes[t]
}

// themeCSS returns the highlighting rules of both themes, each inside its
// prefers-color-scheme media query. Scoping both (rather than making light
// the default) keeps a token class that only the light theme colours from
// leaking into the dark one.
func themeCSS() ([]byte, error) {
	f := chromahtml.New(chromahtml.WithClasses(true), chromahtml.WithCSSComments(false))
	var b bytes.Buffer
	for _, t := range []struct{ scheme, style string }{{"light", lightTheme}, {"dark", darkTheme}} {
		style, ok := styles.Registry[t.style]
		if !ok {
			return nil, fmt.Errorf("chroma style %q not found", t.style)
		}
		fmt.Fprintf(&b, "\n/* Syntax highlighting: chroma %q. */\n@media (prefers-color-scheme: %s) {\n", t.style, t.scheme)
		if err := f.WriteCSS(&b, style); err != nil {
			return nil, fmt.Errorf("write %s css: %w", t.style, err)
		}
		b.WriteString("}\n")
	}
	return b.Bytes(), nil
}
