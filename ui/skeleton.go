package ui

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pastenode/pastenode"
)

// The paste page of a common paste is written from a skeleton: the page the
// template renders with a marker in place of each per-paste value, split at
// the markers. Filling it in writes the same bytes as the template, without
// html/template's reflection, which cost an export much of its time. A
// value goes in only when no escaper of its context would change it (see
// fitsID and fitsText), and New checks that the template leaves such values
// as they are; any other paste takes the template.

// slot is a per-paste value of the paste page, an index into slotValues.
type slot int

const (
	slotHeadTitle slot = iota
	slotHeading
	slotID
	slotDownload
	slotLangLabel
	slotSize
	slotLines
	slotDigits
	slotCreatedExact
	slotCreatedRel
	slotExpiresExact
	slotExpiresRel
	slotBody
	slotMarkdown
	numSlots
)

// slotValues are a page's per-paste values as the page writes them.
type slotValues [numSlots]string

// skeleton is the paste page of one shape: constant parts with a slot
// between each two.
type skeleton struct {
	parts []string
	slots []slot
}

// shape is what decides the structure of a common paste page beyond its
// values: whether it expires, whether it has one line ("1 line", not "1
// lines"), and whether it shows rendered Markdown.
type shape struct{ expires, oneLine, markdown bool }

func shapeOf(v *pasteView) shape {
	return shape{expires: v.Expires != nil, oneLine: v.Lines == 1, markdown: v.Markdown != ""}
}

// buildSkeletons renders the skeleton of every shape of paste page.
func (u *UI) buildSkeletons() (map[shape]*skeleton, error) {
	out := make(map[shape]*skeleton)
	for i := range 8 {
		sh := shape{expires: i&1 != 0, oneLine: i&2 != 0, markdown: i&4 != 0}
		s, err := u.buildSkeleton(sh)
		if err != nil {
			return nil, fmt.Errorf("paste page skeleton %+v: %w", sh, err)
		}
		out[sh] = s
	}
	return out, nil
}

// buildSkeleton renders the page of shape sh with two different sets of
// markers, which must split it the same way (so that no marker matched
// a constant by chance), and checks that the template leaves a probe of
// the characters fitsID and fitsText accept as it is in every slot.
func (u *UI) buildSkeleton(sh shape) (*skeleton, error) {
	var s [2]*skeleton
	for i, base := range []int{7_770_100, 8_880_100} {
		var marks slotValues
		for sl := range numSlots {
			marks[sl] = strconv.Itoa(base + int(sl))
		}
		if sh.oneLine {
			marks[slotLines] = "1"
		}
		page, err := u.renderSlots(sh, marks)
		if err != nil {
			return nil, err
		}
		if sh.oneLine {
			marks[slotLines] = "" // a constant of this shape, not a slot
		}
		s[i] = split(page, marks)
	}
	if !s[0].sameAs(s[1]) {
		return nil, errors.New("markers split the page differently")
	}
	return s[0], s[0].checkProbe(u, sh)
}

// probes are values with the characters fitsID accepts, and HTML, for the
// slots that fitsText does not check.
var probes = map[slot]string{
	slotID:       "Az09-_",
	slotBody:     `<span class="x">a&amp;b</span>`,
	slotMarkdown: `<p><a href="/x" rel="nofollow noopener">a&amp;b</a></p>`,
}

// textProbe is the probe of the other string slots: every printable ASCII
// character fitsText accepts, and a letter beyond ASCII.
const textProbe = " !#$%()*,-./09:;=?@AZ[\\]^_`az{|}~·é"

// checkProbe renders the page with probe values and compares it with the
// skeleton filled in with them.
func (s *skeleton) checkProbe(u *UI, sh shape) error {
	var vals slotValues
	for sl := range numSlots {
		vals[sl] = "p" + strconv.Itoa(int(sl)) + textProbe
		if p, ok := probes[sl]; ok {
			vals[sl] = p
		}
	}
	vals[slotLines], vals[slotDigits] = "12345", "5"
	if sh.oneLine {
		vals[slotLines] = "1"
	}
	want, err := u.renderSlots(sh, vals)
	if err != nil {
		return err
	}
	var got strings.Builder
	s.write(&got, &vals) // a strings.Builder takes every write
	if got.String() != want {
		return errors.New("the template escapes a value that the skeleton would put in as it is")
	}
	return nil
}

// renderSlots renders, through the template, the page of shape sh with
// vals as its per-paste values; the numeric slots must hold numbers.
func (u *UI) renderSlots(sh shape, vals slotValues) (string, error) {
	lines, err1 := strconv.Atoi(vals[slotLines])
	digits, err2 := strconv.Atoi(vals[slotDigits])
	if err := errors.Join(err1, err2); err != nil {
		return "", err
	}
	v := pasteView{
		page:      u.page(vals[slotHeadTitle]),
		Paste:     Paste{ID: vals[slotID]},
		Heading:   vals[slotHeading],
		LangLabel: vals[slotLangLabel],
		Size:      vals[slotSize],
		Lines:     lines,
		Digits:    digits,
		Created:   stamp{Exact: vals[slotCreatedExact], Rel: vals[slotCreatedRel]},
		Body:      template.HTML(vals[slotBody]),
		Download:  vals[slotDownload],
	}
	v.NoIndex = true
	if sh.expires {
		v.Expires = &stamp{Exact: vals[slotExpiresExact], Rel: vals[slotExpiresRel]}
	}
	if sh.markdown {
		v.Markdown = template.HTML(vals[slotMarkdown])
	}
	var b strings.Builder
	err := u.render(&b, "paste", v)
	return b.String(), err
}

// split cuts page at every occurrence of a marker; an empty one marks no
// slot.
func split(page string, marks slotValues) *skeleton {
	s := &skeleton{}
	for {
		at, which := -1, slot(0)
		for sl, m := range marks {
			if m == "" {
				continue
			}
			if i := strings.Index(page, m); i >= 0 && (at < 0 || i < at) {
				at, which = i, slot(sl)
			}
		}
		if at < 0 {
			s.parts = append(s.parts, page)
			return s
		}
		s.parts = append(s.parts, page[:at])
		s.slots = append(s.slots, which)
		page = page[at+len(marks[which]):]
	}
}

func (s *skeleton) sameAs(o *skeleton) bool {
	return slices.Equal(s.parts, o.parts) && slices.Equal(s.slots, o.slots)
}

// write writes the page with vals in its slots.
func (s *skeleton) write(w io.Writer, vals *slotValues) error {
	for i, sl := range s.slots {
		if _, err := io.WriteString(w, s.parts[i]); err != nil {
			return err
		}
		if _, err := io.WriteString(w, vals[sl]); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, s.parts[len(s.parts)-1])
	return err
}

// valuesOf returns the per-paste values of v, and false if v is not a
// common page or one of them is not one that every escaper leaves as it
// is. A common page has no notes and shows a paste neither burned nor
// encrypted.
func valuesOf(v *pasteView) (slotValues, bool) {
	if len(v.Notes) > 0 || v.Burn || v.Encrypted {
		return slotValues{}, false
	}
	vals := slotValues{
		slotHeadTitle:    v.HeadTitle,
		slotHeading:      v.Heading,
		slotID:           v.ID,
		slotDownload:     v.Download,
		slotLangLabel:    v.LangLabel,
		slotSize:         v.Size,
		slotLines:        strconv.Itoa(v.Lines),
		slotDigits:       strconv.Itoa(v.Digits),
		slotCreatedExact: v.Created.Exact,
		slotCreatedRel:   v.Created.Rel,
		slotBody:         string(v.Body),
		slotMarkdown:     string(v.Markdown),
	}
	if v.Expires != nil {
		vals[slotExpiresExact], vals[slotExpiresRel] = v.Expires.Exact, v.Expires.Rel
	}
	if !fitsID(v.ID) {
		return vals, false
	}
	for sl, val := range vals {
		if slot(sl) != slotID && slot(sl) != slotBody && slot(sl) != slotMarkdown && !fitsText(val) {
			return vals, false
		}
	}
	return vals, true
}

// fitsID reports whether id is made of the characters that a URL keeps as
// they are (pastenode.URLSafeID).
var fitsID = pastenode.URLSafeID

// fitsText reports whether html/template writes s as it is in text and
// quoted attributes: valid UTF-8 without control characters, without the
// characters it escapes (" & ' + < >) and without the noncharacters it
// writes as references.
func fitsText(s string) bool {
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f || strings.ContainsRune(`"&'+<>`, r):
			return false
		case r == utf8.RuneError || 0xfdd0 <= r && r <= 0xfdef || 0xfff0 <= r && r <= 0xffff:
			return false
		}
	}
	return true
}
