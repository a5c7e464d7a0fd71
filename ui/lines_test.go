package ui

import (
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/chroma/v2"
)

// TestRenderLinesSplitsAsChroma checks that renderLines cuts lines where
// chroma.SplitTokensIntoLines does, empty tokens and trailing newlines
// included, against a writer built on that function.
func TestRenderLinesSplitsAsChroma(t *testing.T) {
	tok := func(v string) chroma.Token { return chroma.Token{Type: chroma.Keyword, Value: v} }
	txt := func(v string) chroma.Token { return chroma.Token{Type: chroma.Text, Value: v} }
	for _, tokens := range [][]chroma.Token{
		nil,
		{txt("")},
		{txt("\n")},
		{txt("one line")},
		{txt("a\nb\n")},
		{txt("a\n\n\nb")},
		{tok("if"), txt(" x\n"), tok("")},
		{tok("a\n"), txt(""), tok("b")},
		{tok("a"), txt(""), tok("\nb\n"), txt("\n")},
		{txt("<&>\n"), tok("'\"")},
	} {
		want, wantLines := splitRender(tokens)
		got, lines := renderLines(tokens, 0)
		if string(got) != want || lines != wantLines {
			t.Errorf("tokens %q:\n got %d lines %s\nwant %d lines %s", tokens, lines, got, wantLines, want)
		}
	}
}

// splitRender is renderLines written over chroma.SplitTokensIntoLines.
func splitRender(tokens []chroma.Token) (string, int) {
	var b strings.Builder
	lines := chroma.SplitTokensIntoLines(tokens)
	for i, line := range lines {
		n := strconv.Itoa(i + 1)
		b.WriteString(`<span class="line" id="L` + n + `"><a class="ln" href="#L` + n + `"></a><span class="cl">`)
		for _, tok := range line {
			writeToken(&b, tokenClass(tok.Type), tok.Value)
		}
		b.WriteString("</span></span>")
	}
	return b.String(), len(lines)
}
