package ui

import (
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/formatters"
	"github.com/alecthomas/chroma/v2/styles"
)

// ANSIType is the media type of a paste highlighted for a terminal, which
// a client asks for with Accept or gets with ?fmt=ansi.
const ANSIType = "text/x-ansi"

// terminalStyle is the chroma style of terminal output: most terminals
// have a dark background.
const terminalStyle = darkTheme

// terminalFormatters maps the values of ?fmt= to chroma's terminal
// formatters: 256 colours by default, 16, or 24-bit colour.
var terminalFormatters = map[string]chroma.Formatter{
	"ansi":      formatters.TTY256,
	"ansi256":   formatters.TTY256,
	"ansi16":    formatters.TTY16,
	"truecolor": formatters.TTY16m,
}

// TerminalFormat returns the terminal format that r asks for: ?fmt=ansi,
// ansi16 or truecolor, or Accept: text/x-ansi (256 colours). ok is false
// when r asks for none; known is false when ?fmt= names a format that does
// not exist.
func TerminalFormat(r *http.Request) (format string, ok, known bool) {
	// Most reads ask for no terminal format: check cheaply before parsing.
	if strings.Contains(r.URL.RawQuery, "fmt=") {
		if v := r.URL.Query().Get("fmt"); v != "" {
			_, known = terminalFormatters[v]
			return v, true, known
		}
	}
	accept := r.Header.Get("Accept")
	if !strings.Contains(accept, ANSIType) {
		return "", false, false
	}
	for _, part := range strings.Split(accept, ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == ANSIType {
			return "ansi", true, true
		}
	}
	return "", false, false
}

// Terminal writes p's content highlighted with ANSI colour escapes in the
// terminal format (see TerminalFormat), as the language lang, or the
// paste's own when lang is empty. It keeps the budget of the pages: a
// paste larger than MaxHighlightBytes, an encrypted one, one in no
// language, or one whose highlighting runs out of the time budget is
// written without colours, and text that is not UTF-8 has its
// bad bytes replaced, as on the page.
func (u *UI) Terminal(w io.Writer, p Paste, lang, format string) error {
	f, ok := terminalFormatters[format]
	if !ok {
		f = formatters.TTY256
	}
	if lang == "" {
		lang = p.Lang
	}
	text := strings.ToValidUTF8(string(p.Content), "\uFFFD")
	lexer := lexerFor(lang)
	if p.Encrypted || len(p.Content) > u.opts.MaxHighlightBytes {
		lexer = nil
	}
	if lexer != nil {
		// The page's verdict, cached and shared by concurrent first views:
		// a paste that ran out of budget once is not tokenised again for
		// every terminal read. (For a Markdown paste this renders the page's
		// Markdown too, once, as the cached body holds both.)
		p.Lang = lang
		if u.body(p, lexer, text).plain {
			lexer = nil
		}
	}
	style := styles.Get(terminalStyle)
	tokens, _ := u.hl.tokens(lexer, text) // under the pages' time budget
	return f.Format(w, style, chroma.Literator(tokens...))
}
