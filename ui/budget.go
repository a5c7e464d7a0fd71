package ui

import (
	"html/template"
	"runtime"
	"time"

	"github.com/alecthomas/chroma/v2"
	"golang.org/x/sync/singleflight"
)

// DefaultHighlightBudget is how long highlighting one paste may take when
// Options.HighlightBudget is 0. Past it the paste is shown as plain escaped
// text.
const DefaultHighlightBudget = 200 * time.Millisecond

// highlighter runs chroma's tokenisers and goldmark's Markdown renders
// under a time budget. Some lexers take seconds of CPU per kilobyte on
// hostile input (a long run of one letter as a makefile), and neither a
// tokeniser nor goldmark can be interrupted from outside: each runs in a
// goroutine that is abandoned when the budget ends. A semaphore bounds how
// many run at once, so that abandoned ones cannot pile up and take every
// core; a render that finds every slot busy for its whole budget is served
// plain. The work itself stops soon after its deadline: the tokeniser's
// iterator at the first token after it, a Markdown render at the next
// step of any of goldmark's parsers (see markdown.go).
//
// Every rendering of a paste's text (the pages, the export, a terminal
// rendering) tokenises through highlighter.tokens, so none can escape the
// budget.
type highlighter struct {
	budget time.Duration
	group  singleflight.Group // concurrent first views of one paste share a render
}

// tokeniserSlots bounds the tokenisers and Markdown renders running at
// once in the process, abandoned ones included, whichever UI started them.
var tokeniserSlots = make(chan struct{}, max(1, runtime.NumCPU()/2))

// outcome is how a highlighting or rendering attempt ended.
type outcome int

const (
	highlighted outcome = iota // the lexer's tokens or the rendered Markdown, in time
	overBudget                 // the work ran out of time or failed: plain text, for good
	busy                       // no slot free within the budget: plain text, this time
)

// tokens tokenises text with lexer within the budget. Unless the outcome is
// highlighted, the tokens are the plain text as one token.
func (h *highlighter) tokens(lexer chroma.Lexer, text string) ([]chroma.Token, outcome) {
	plain := []chroma.Token{{Type: chroma.Text, Value: text}}
	if lexer == nil || text == "" {
		return plain, highlighted
	}
	tokens, res := withinBudget(h, func(deadline time.Time) ([]chroma.Token, bool) {
		t := tokenise(lexer, text, deadline)
		return t, t != nil
	})
	if res != highlighted {
		return plain, res
	}
	return tokens, res
}

// markdown renders the Markdown text within the budget; unless the
// outcome is highlighted, the HTML is empty.
func (h *highlighter) markdown(text string) (template.HTML, outcome) {
	return withinBudget(h, func(deadline time.Time) (template.HTML, bool) {
		return renderMarkdown(text, deadline)
	})
}

// withinBudget runs work in a goroutine that holds a slot, and waits for
// it until the budget ends. work gets the deadline and reports whether it
// finished in time.
func withinBudget[T any](h *highlighter, work func(deadline time.Time) (T, bool)) (T, outcome) {
	var none T
	deadline := time.Now().Add(h.budget)
	timer := time.NewTimer(h.budget)
	defer timer.Stop()
	select {
	case tokeniserSlots <- struct{}{}:
	case <-timer.C:
		return none, busy
	}
	type result struct {
		v  T
		ok bool
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-tokeniserSlots }()
		v, ok := work(deadline)
		done <- result{v, ok}
	}()
	select {
	case r := <-done:
		if !r.ok {
			return none, overBudget
		}
		return r.v, highlighted
	case <-timer.C:
		return none, overBudget
	}
}

// tokenise runs the lexer over text until deadline. It returns nil when the
// lexer fails, panics or is still running at the deadline. Pastes are
// hostile input, and a lexer bug must cost the highlighting, not the page.
func tokenise(lexer chroma.Lexer, text string, deadline time.Time) (tokens []chroma.Token) {
	defer func() {
		if recover() != nil {
			tokens = nil
		}
	}()
	// Not chroma.Coalesce: its iterator pulls tokens until the type
	// changes, so on a run of one type it never comes back to the check.
	it, err := lexer.Tokenise(nil, text)
	if err != nil {
		return nil
	}
	for t := it(); t != chroma.EOF; t = it() {
		if time.Now().After(deadline) {
			return nil
		}
		if t.Value == "" {
			continue
		}
		// Runs of one type merge, as chroma.Coalesce merges them, in
		// pieces of at most 8 KiB.
		if n := len(tokens); n > 0 && tokens[n-1].Type == t.Type && len(tokens[n-1].Value) < 8192 {
			tokens[n-1].Value += t.Value
			continue
		}
		tokens = append(tokens, t)
	}
	return tokens
}
