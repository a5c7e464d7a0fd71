package ui

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/chroma/v2"

	"github.com/pastenode/pastenode"
)

//go:embed templates/*.html static/app.css static/app.js
var files embed.FS

// DefaultMaxHighlightBytes is the size above which a paste is shown without
// highlighting when Options.MaxHighlightBytes is 0.
const DefaultMaxHighlightBytes = 256 << 10

// notFoundText is what the 404 page says: a reader cannot tell, and need not
// know, which of the three happened.
const notFoundText = "This paste does not exist, has expired, or was already read."

// Paste is what the pages show. Content is the raw stored bytes; for an
// encrypted paste it is the ciphertext text described in the package
// documentation.
type Paste struct {
	ID        string
	Title     string
	Lang      string // canonical chroma lexer name, or "" for plain text
	Content   []byte
	CreatedAt time.Time
	ExpiresAt time.Time // zero: never
	Burn      bool
	Encrypted bool
}

// Options configure a UI.
type Options struct {
	// Mirror renders a read-only static mirror: the index page says so
	// instead of showing the form, paste pages offer no action that
	// creates a paste, and their times are fixed (the UTC time, which the
	// page's script shows relative to the reader's clock) rather than
	// relative to the time of rendering.
	Mirror bool
	// MaxHighlightBytes is the size above which a paste is shown as plain
	// escaped text; 0 means DefaultMaxHighlightBytes.
	MaxHighlightBytes int
	// BasePath is the path prefix the node serves under, as "/paste"
	// (see CheckBasePath); every link, form and fetch of the pages
	// starts with it. "" serves at the root.
	BasePath string
	// HighlightCacheBytes bounds the cache of highlighted pastes; 0 means
	// DefaultHighlightCacheBytes and a negative value turns it off (an
	// export renders each paste once).
	HighlightCacheBytes int
	// CacheOf, when set, is another UI whose cache of highlighted pastes
	// this one reads but never fills: an export reuses what the live
	// node's pages have highlighted without pushing them out of its cache.
	CacheOf *UI
	// HighlightBudget is how long highlighting one paste may take before
	// it is shown as plain escaped text; 0 means DefaultHighlightBudget.
	HighlightBudget time.Duration
}

// Option is one choice of a select: the value posted and its label.
type Option struct {
	Value string
	Label string
}

// IndexData fills the new-paste form. Nil Langs and Expires mean Langs()
// and ExpireOptions(). The Prefill fields carry a paste to clone and edit,
// or the user's input back after an Error.
type IndexData struct {
	Langs         []Lang
	Expires       []Option
	MaxSize       int64 // bytes; 0 hides the hint
	Prefill       string
	PrefillLang   string
	PrefillTitle  string
	PrefillExpire string // an Expires value; "" selects the first
	PrefillBurn   bool
	Error         string
	// TokenRequired shows the create token field: the node was started
	// with --create-tokens.
	TokenRequired bool
}

// UI renders the pages. It is safe for concurrent use.
type UI struct {
	opts   Options
	cache  *bodyCache
	hl     *highlighter
	pages  map[string]*template.Template
	assets map[string]*asset
	// skeletons write the common paste pages (see skeleton).
	skeletons map[shape]*skeleton
}

// New parses the embedded templates and builds the static assets.
func New(opts Options) (*UI, error) {
	if err := CheckBasePath(opts.BasePath); err != nil {
		return nil, err
	}
	if opts.MaxHighlightBytes <= 0 {
		opts.MaxHighlightBytes = DefaultMaxHighlightBytes
	}
	if opts.HighlightCacheBytes == 0 {
		opts.HighlightCacheBytes = DefaultHighlightCacheBytes
	}
	if opts.HighlightBudget <= 0 {
		opts.HighlightBudget = DefaultHighlightBudget
	}
	u := &UI{opts: opts, hl: &highlighter{budget: opts.HighlightBudget}, pages: map[string]*template.Template{}, assets: map[string]*asset{}}
	u.cache = newBodyCache(opts.HighlightCacheBytes)

	css, err := files.ReadFile("static/app.css")
	if err != nil {
		return nil, fmt.Errorf("read css: %w", err)
	}
	themes, err := themeCSS()
	if err != nil {
		return nil, err
	}
	js, err := files.ReadFile("static/app.js")
	if err != nil {
		return nil, fmt.Errorf("read js: %w", err)
	}
	u.assets["app.css"] = newAsset(append(css, themes...), "text/css; charset=utf-8")
	u.assets["app.js"] = newAsset(js, "text/javascript; charset=utf-8")

	for _, name := range []string{"index", "paste", "burn", "error"} {
		t, err := template.ParseFS(files, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parse %s template: %w", name, err)
		}
		u.pages[name] = t
	}
	if u.skeletons, err = u.buildSkeletons(); err != nil {
		return nil, err
	}
	return u, nil
}

// CSP returns the Content-Security-Policy that the api sets on every HTML
// page. The pages need nothing beyond it: no inline script or style, no
// outside origin.
func CSP() string {
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
}

// ExpireOptions returns the expiries the form offers, in the API's syntax.
func ExpireOptions() []Option {
	return []Option{
		{Value: "never", Label: "never"},
		{Value: "10m", Label: "10 minutes"},
		{Value: "1h", Label: "1 hour"},
		{Value: "1d", Label: "1 day"},
		{Value: "1w", Label: "1 week"},
	}
}

// page is what the layout needs; every page's data embeds it.
type page struct {
	HeadTitle string
	Mirror    bool
	NoIndex   bool // keep search engines off pages that show a paste
	Base      string
	CSS       string
	JS        string
}

func (u *UI) page(title string) page {
	return page{
		HeadTitle: title,
		Mirror:    u.opts.Mirror,
		Base:      u.opts.BasePath,
		CSS:       u.opts.BasePath + "/static/app.css?v=" + u.assets["app.css"].version,
		JS:        u.opts.BasePath + "/static/app.js?v=" + u.assets["app.js"].version,
	}
}

func (u *UI) render(w io.Writer, name string, data any) error {
	if err := u.pages[name].ExecuteTemplate(w, "layout", data); err != nil {
		return fmt.Errorf("render %s page: %w", name, err)
	}
	return nil
}

// choice is one option of a select as the template writes it.
type choice struct {
	Value    string
	Label    string
	Selected bool
}

type indexView struct {
	page
	IndexData
	LangChoices   []choice
	ExpireChoices []choice
	MaxSizeText   string
}

// Index writes "/": the new-paste form, or in mirror mode a page that says
// the site is a read-only mirror.
func (u *UI) Index(w io.Writer, d IndexData) error {
	v := indexView{page: u.page("New paste · pastenode"), IndexData: d}
	if u.opts.Mirror {
		v.HeadTitle = "Read-only mirror · pastenode"
		return u.render(w, "index", v)
	}
	if d.Langs == nil {
		d.Langs = Langs()
	}
	if d.Expires == nil {
		d.Expires = ExpireOptions()
	}
	want, _ := LookupLang(d.PrefillLang)
	for _, l := range d.Langs {
		v.LangChoices = append(v.LangChoices, choice{Value: l.Name, Label: l.Label, Selected: l.Name == want})
	}
	for i, e := range d.Expires {
		sel := e.Value == d.PrefillExpire || (d.PrefillExpire == "" && i == 0)
		v.ExpireChoices = append(v.ExpireChoices, choice{Value: e.Value, Label: e.Label, Selected: sel})
	}
	if d.MaxSize > 0 {
		v.MaxSizeText = pastenode.FormatSize(d.MaxSize)
	}
	return u.render(w, "index", v)
}

type pasteView struct {
	page
	Paste
	Heading   string
	LangLabel string
	Size      string
	Lines     int
	Digits    int // of the last line number, for the width of the gutter
	Created   stamp
	Expires   *stamp // nil: never
	Body      template.HTML
	Markdown  template.HTML // the rendering of a Markdown paste, shown before Body
	Text      string        // the ciphertext of an encrypted paste
	Notes     []string
	Download  string // file name

	busy bool // the body is plain, or not rendered, because no slot was free
}

// Paste writes the view of a paste. now is the time that relative times
// count from; a mirror's pages show fixed times instead, so that what an
// export stores stays true and the page of a paste is the same in every
// export.
func (u *UI) Paste(w io.Writer, p Paste, now time.Time) error {
	_, err := u.RenderPaste(w, p, now)
	return err
}

// RenderPaste is Paste that also reports whether the page is final: the
// same page as every later rendering of p at the same time would write.
// It is not when the highlighting found no tokeniser free and showed the
// text plain this once. A mirror's pages, whose times are fixed, are the
// same at any time, and a final one can be kept for the next export.
func (u *UI) RenderPaste(w io.Writer, p Paste, now time.Time) (final bool, err error) {
	v := u.pasteView(p, now)
	if vals, ok := valuesOf(&v); ok {
		if err := u.skeletons[shapeOf(&v)].write(w, &vals); err != nil {
			return false, fmt.Errorf("render paste page: %w", err)
		}
		return !v.busy, nil
	}
	return !v.busy, u.render(w, "paste", v)
}

// stamp is t as this UI's pages show it at now.
func (u *UI) stamp(t, now time.Time) stamp {
	if u.opts.Mirror {
		return fixedStamp(t)
	}
	return stamp{Rel: relTime(t, now), Exact: t.UTC().Format(time.RFC3339)}
}

// pasteView is what the page of p shows.
func (u *UI) pasteView(p Paste, now time.Time) pasteView {
	v := pasteView{
		page:      u.page(titleOf(p) + " · pastenode"),
		Paste:     p,
		Heading:   titleOf(p),
		LangLabel: langLabel(p.Lang),
		Size:      pastenode.FormatSize(int64(len(p.Content))),
		Created:   u.stamp(p.CreatedAt, now),
		Download:  DownloadName(p),
	}
	v.NoIndex = true
	if !p.ExpiresAt.IsZero() {
		s := u.stamp(p.ExpiresAt, now)
		v.Expires = &s
	}
	if p.Burn {
		v.Notes = append(v.Notes, "This paste has been destroyed on the server: this page is the only copy left.")
	}
	if p.Encrypted {
		v.Text = string(p.Content)
		return v
	}

	text := string(p.Content)
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
		v.Notes = append(v.Notes, "This paste is not valid UTF-8 text; bytes that are not are shown as \uFFFD. Download it for the exact bytes.")
	}
	lexer := lexerFor(p.Lang)
	if lexer != nil && len(p.Content) > u.opts.MaxHighlightBytes {
		lexer = nil
		shown := "without highlighting"
		if isMarkdown(p.Lang) {
			shown = "as source, without rendering or highlighting"
		}
		v.Notes = append(v.Notes, "This paste is larger than "+pastenode.FormatSize(int64(u.opts.MaxHighlightBytes))+", so it is shown "+shown+".")
	}
	b := u.body(p, lexer, text)
	switch {
	case b.busy:
		v.Notes = append(v.Notes, "The highlighter was busy when this page was made, so the paste is shown without highlighting.")
	case b.plain:
		v.Notes = append(v.Notes, "Highlighting this paste took too long, so it is shown without highlighting.")
	}
	switch b.mdRes {
	case busy:
		v.Notes = append(v.Notes, "The renderer was busy when this page was made, so the Markdown is shown as source.")
	case overBudget:
		v.Notes = append(v.Notes, "Rendering this Markdown took too long, so it is shown as source.")
	}
	v.Body, v.Lines, v.Markdown = b.html, b.lines, b.markdown
	v.busy = b.busy || b.mdRes == busy
	v.Digits = min(len(strconv.Itoa(v.Lines)), 7)
	return v
}

// body renders the paste's lines, highlighted within the budget, and the
// Markdown of a Markdown paste that is highlighted (not one too large for
// that), from the cache when it can: a paste never changes, so its id,
// language and creation time name what is shown, and a paste that ran out
// of budget is served plain from then on. Concurrent first views of one
// paste share one render. Burned pastes are shown once and never cached.
func (u *UI) body(p Paste, lexer chroma.Lexer, text string) renderedBody {
	md := lexer != nil && isMarkdown(p.Lang)
	if lexer == nil || p.Burn || p.ID == "" {
		return u.highlight(lexer, text, md)
	}
	key := p.ID + "\x00" + p.Lang + "\x00" + strconv.FormatInt(p.CreatedAt.UnixNano(), 36)
	if b, ok := u.cache.get(key); ok {
		return b
	}
	if u.opts.CacheOf != nil {
		if b, ok := u.opts.CacheOf.cache.get(key); ok {
			return b
		}
	}
	v, _, _ := u.hl.group.Do(key, func() (any, error) {
		if b, ok := u.cache.get(key); ok {
			return b, nil
		}
		b := u.highlight(lexer, text, md)
		if !b.busy && b.mdRes != busy {
			u.cache.add(key, b)
		}
		return b, nil
	})
	return v.(renderedBody)
}

// highlight renders text's lines with lexer (nil: plain) and, with md,
// the Markdown of text, each within the budget.
func (u *UI) highlight(lexer chroma.Lexer, text string, md bool) renderedBody {
	tokens, res := u.hl.tokens(lexer, text)
	html, lines := renderLines(tokens, len(text))
	b := renderedBody{html: html, lines: lines, plain: res != highlighted, busy: res == busy}
	if md {
		b.markdown, b.mdRes = u.hl.markdown(text)
	}
	return b
}

// titleOf is the heading of a paste: its title, or its id.
func titleOf(p Paste) string {
	if p.Title != "" {
		return p.Title
	}
	return "Paste " + p.ID
}

type burnView struct {
	page
	Paste
	Heading string
}

// BurnNotice writes the page a browser sees first for a burn-after-reading
// paste. It never contains the content: only the click on its #reveal
// button (a POST to /{id}/reveal, or for an encrypted paste a fetch of
// /raw/{id} by the script) consumes the paste.
func (u *UI) BurnNotice(w io.Writer, p Paste) error {
	p.Content = nil
	v := burnView{page: u.page("Burn after reading · pastenode"), Paste: p, Heading: titleOf(p)}
	v.NoIndex = true
	return u.render(w, "burn", v)
}

type errorView struct {
	page
	Status  int
	Heading string
	Message string
}

// Error writes a friendly error page. A 404 always explains that the paste
// does not exist, has expired or was already read; other statuses show msg,
// or the status text when msg is empty.
func (u *UI) Error(w io.Writer, status int, msg string) error {
	v := errorView{Status: status, Heading: http.StatusText(status), Message: msg}
	switch {
	case status == http.StatusNotFound:
		v.Heading, v.Message = "Paste not found", notFoundText
	case v.Heading == "":
		v.Heading = "Error " + strconv.Itoa(status)
	}
	if v.Message == "" {
		v.Message = "Something went wrong (" + strconv.Itoa(status) + ")."
	}
	v.page = u.page(v.Heading + " · pastenode")
	return u.render(w, "error", v)
}
