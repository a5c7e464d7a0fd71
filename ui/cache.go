package ui

import (
	"html/template"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// DefaultHighlightCacheBytes is the size of the cache of highlighted pastes
// when Options.HighlightCacheBytes is 0.
const DefaultHighlightCacheBytes = 32 << 20

// bodyCache keeps highlighted paste bodies (and the rendering of a
// Markdown paste), least recently used first out, within a byte budget.
// Highlighting costs milliseconds per kilobyte and a paste never changes,
// so every view after the first is a lookup.
type bodyCache struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[string, renderedBody]
	bytes int
	max   int
}

type renderedBody struct {
	html  template.HTML
	lines int
	plain bool // highlighting ran out of its budget, or found no tokeniser free
	busy  bool // no tokeniser was free: another render may highlight it; never cached

	// markdown is the rendering of a Markdown paste, and mdRes how that
	// ended: unless it is highlighted (rendered in time), markdown is
	// empty, and mdRes busy is never cached either.
	markdown template.HTML
	mdRes    outcome
}

// size is what b counts against the cache's byte budget.
func (b renderedBody) size() int { return len(b.html) + len(b.markdown) }

func newBodyCache(maxBytes int) *bodyCache {
	if maxBytes <= 0 {
		return nil
	}
	c := &bodyCache{max: maxBytes}
	// The entry count is only a backstop; the byte budget decides.
	c.lru, _ = simplelru.NewLRU(1<<20, func(_ string, b renderedBody) { c.bytes -= b.size() })
	return c
}

func (c *bodyCache) get(key string) (renderedBody, bool) {
	if c == nil {
		return renderedBody{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Get(key)
}

func (c *bodyCache) add(key string, b renderedBody) {
	if c == nil || b.size() > c.max/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.lru.Peek(key); ok {
		c.bytes -= old.size()
	}
	c.lru.Add(key, b) // an eviction here is counted by the callback
	c.bytes += b.size()
	for c.bytes > c.max {
		c.lru.RemoveOldest()
	}
}
