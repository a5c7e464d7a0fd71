package ui

import (
	"errors"
	"html/template"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// A paste whose language is Markdown is shown rendered by goldmark, with
// its highlighted source beside it. The rendering is CommonMark with
// GitHub's tables, strikethrough, task lists and bare links. Raw HTML is
// left out (goldmark's default), as are javascript: and other dangerous
// link targets. Links get rel="nofollow noopener", and an image becomes
// a link to it: the page's CSP would refuse an image from another host,
// and one from this host could be a /raw/ read that burns a paste.
// Headings get no id, so the rendering cannot take the id of a line or
// of an element of the page.
//
// goldmark takes time quadratic in the size of some hostile inputs (deep
// nesting, long runs of delimiters), minutes for a paste of a megabyte,
// and has no way to be stopped. So it runs like a tokeniser, in a
// goroutine under the highlighting budget, and every parser and the
// output check the render's deadline and panic past it: an abandoned
// render stops soon after its budget instead of holding a tokeniser slot.

// isMarkdown reports whether lang, a canonical language name, is Markdown.
func isMarkdown(lang string) bool { return lang == "markdown" }

// errPastDeadline is what a Markdown render panics with past its deadline.
var errPastDeadline = errors.New("markdown render past its deadline")

// checkDeadline panics with errPastDeadline once d has passed.
func checkDeadline(d time.Time) {
	if time.Now().After(d) {
		panic(errPastDeadline)
	}
}

// renderContext is the parser.Context of a render, which carries its
// deadline to the parsers. goldmark takes the link reference definitions
// at the start of a paragraph in one call, quadratic in their number, and
// adds them here one by one, so each addition checks the deadline too.
type renderContext struct {
	parser.Context
	deadline time.Time
}

func (c renderContext) AddReference(r parser.Reference) {
	checkDeadline(c.deadline)
	c.Context.AddReference(r)
}

// deadlineOf is the deadline of the render whose context is pc.
func deadlineOf(pc parser.Context) time.Time { return pc.(renderContext).deadline }

// renderMarkdown renders src until deadline. It returns false when the
// render ran past its deadline or failed: a goldmark bug on a hostile
// paste must cost the rendering, not the page.
func renderMarkdown(src string, deadline time.Time) (out template.HTML, ok bool) {
	defer func() {
		if recover() != nil {
			out, ok = "", false
		}
	}()
	source := []byte(src)
	pc := renderContext{parser.NewContext(), deadline}
	doc := mdParser().Parse(text.NewReader(source), parser.WithContext(pc))
	var b strings.Builder
	b.Grow(len(source) + len(source)/4)
	if err := mdRenderer().Render(deadlineWriter{&b, deadline}, source, doc); err != nil {
		return "", false
	}
	return template.HTML(b.String()), true
}

// deadlineWriter is the render's output. goldmark buffers it, so it sees
// a write every few kilobytes.
type deadlineWriter struct {
	w        io.Writer
	deadline time.Time
}

func (w deadlineWriter) Write(p []byte) (int, error) {
	checkDeadline(w.deadline)
	return w.w.Write(p)
}

// mdParser is goldmark's parser with GitHub's extensions, every parser
// checking the deadline, and linkPolicy.
var mdParser = sync.OnceValue(func() parser.Parser {
	inline := append(parser.DefaultInlineParsers(),
		util.Prioritized(extension.NewLinkifyParser(), 999),
		util.Prioritized(extension.NewStrikethroughParser(), 500),
		util.Prioritized(extension.NewTaskCheckBoxParser(), 0))
	paragraph := append(parser.DefaultParagraphTransformers(),
		util.Prioritized(extension.NewTableParagraphTransformer(), 200))
	return parser.NewParser(
		parser.WithBlockParsers(withDeadline(parser.DefaultBlockParsers())...),
		parser.WithInlineParsers(withDeadline(inline)...),
		parser.WithParagraphTransformers(withDeadline(paragraph)...),
		parser.WithASTTransformers(
			util.Prioritized(extension.NewTableASTTransformer(), 0),
			util.Prioritized(linkPolicy{}, 100)))
})

// mdRenderer writes goldmark's HTML. Table cells are aligned with the
// align attribute: goldmark's default, a style attribute, is refused by
// the page's CSP.
var mdRenderer = sync.OnceValue(func() renderer.Renderer {
	return renderer.NewRenderer(renderer.WithNodeRenderers(
		util.Prioritized(html.NewRenderer(), 1000),
		util.Prioritized(extension.NewTableHTMLRenderer(
			extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)), 500),
		util.Prioritized(extension.NewStrikethroughHTMLRenderer(), 500),
		util.Prioritized(extension.NewTaskCheckBoxHTMLRenderer(), 500)))
})

// withDeadline wraps each of goldmark's parsers so that every call
// checks the render's deadline first.
func withDeadline(parsers []util.PrioritizedValue) []util.PrioritizedValue {
	out := make([]util.PrioritizedValue, len(parsers))
	for i, v := range parsers {
		switch p := v.Value.(type) {
		case parser.BlockParser:
			v.Value = blockWithDeadline{p}
		case parser.InlineParser:
			v.Value = inlineWithDeadline{p}
		case parser.ParagraphTransformer:
			v.Value = paragraphWithDeadline{p}
		}
		out[i] = v
	}
	return out
}

type blockWithDeadline struct{ parser.BlockParser }

func (b blockWithDeadline) Open(parent ast.Node, r text.Reader, pc parser.Context) (ast.Node, parser.State) {
	checkDeadline(deadlineOf(pc))
	return b.BlockParser.Open(parent, r, pc)
}

func (b blockWithDeadline) Continue(n ast.Node, r text.Reader, pc parser.Context) parser.State {
	checkDeadline(deadlineOf(pc))
	return b.BlockParser.Continue(n, r, pc)
}

type inlineWithDeadline struct{ parser.InlineParser }

// Parse also wraps the processor of a delimiter it returns: goldmark
// matches delimiters once a paragraph is parsed, in one call that is
// quadratic in their number, and asks the processor at every step.
func (p inlineWithDeadline) Parse(parent ast.Node, r text.Reader, pc parser.Context) ast.Node {
	d := deadlineOf(pc)
	checkDeadline(d)
	n := p.InlineParser.Parse(parent, r, pc)
	if delim, ok := n.(*parser.Delimiter); ok {
		delim.Processor = delimitersWithDeadline{delim.Processor, d}
	}
	return n
}

// CloseBlock passes the call on to a parser that wants it (the link
// parser does).
func (p inlineWithDeadline) CloseBlock(parent ast.Node, r text.Reader, pc parser.Context) {
	if c, ok := p.InlineParser.(parser.CloseBlocker); ok {
		c.CloseBlock(parent, r, pc)
	}
}

type delimitersWithDeadline struct {
	parser.DelimiterProcessor
	deadline time.Time
}

func (d delimitersWithDeadline) CanOpenCloser(opener, closer *parser.Delimiter) bool {
	checkDeadline(d.deadline)
	return d.DelimiterProcessor.CanOpenCloser(opener, closer)
}

type paragraphWithDeadline struct{ parser.ParagraphTransformer }

func (t paragraphWithDeadline) Transform(n *ast.Paragraph, r text.Reader, pc parser.Context) {
	checkDeadline(deadlineOf(pc))
	t.ParagraphTransformer.Transform(n, r, pc)
}

// linkPolicy gives every link rel="nofollow noopener" and turns every
// image into a link to it, or into its text inside a link, where a link
// would nest.
type linkPolicy struct{}

var linkRel = []byte("nofollow noopener")

func (linkPolicy) Transform(doc *ast.Document, _ text.Reader, pc parser.Context) {
	checkDeadline(deadlineOf(pc))
	var images []*ast.Image
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Link, *ast.AutoLink:
			n.SetAttributeString("rel", linkRel)
		case *ast.Image:
			images = append(images, n) // replaced after the walk, which a replacement would cut short
		}
		return ast.WalkContinue, nil
	})
	for _, img := range images {
		parent := img.Parent()
		if inLink(parent) {
			for c := img.FirstChild(); c != nil; c = img.FirstChild() {
				parent.InsertBefore(parent, img, c)
			}
			parent.RemoveChild(parent, img)
			continue
		}
		link := ast.NewLink()
		link.Destination, link.Title = img.Destination, img.Title
		link.SetAttributeString("rel", linkRel)
		for c := img.FirstChild(); c != nil; c = img.FirstChild() {
			link.AppendChild(link, c)
		}
		parent.ReplaceChild(parent, img, link)
	}
}

// inLink reports whether n is a link or inside one.
func inLink(n ast.Node) bool {
	for ; n != nil; n = n.Parent() {
		switch n.(type) {
		case *ast.Link, *ast.AutoLink:
			return true
		}
	}
	return false
}
