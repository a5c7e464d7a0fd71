package mirror

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/pastenode/pastenode/cdb"
	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/ui"
)

// cachePastes are pastes of every kind an export stores differently: a
// page and raw bytes that compress, raw bytes that do not, a highlighted
// page, an encrypted paste and an expiring one.
func cachePastes(now time.Time) []*fsm.Paste {
	at := func(d time.Duration) int64 { return now.Add(d).UnixNano() }
	noise := make([]byte, 2048)
	for i := range noise {
		noise[i] = byte(i*i*31 + i>>3)
	}
	return []*fsm.Paste{
		{ID: "code", Content: []byte("package main\n\nfunc main() {}\n"), Lang: "Go", Title: "A title", CreatedAt: at(-time.Hour)},
		{ID: "large", Content: bytes.Repeat([]byte("a large paste that compresses very well\n"), 500), CreatedAt: at(-time.Hour)},
		{ID: "noise", Content: noise, CreatedAt: at(-time.Hour)},
		{ID: "secret", Content: []byte("pn1.k.AAAAAAAAAAAAAAAA.BBBBBBBBBBBBBBBBBBBBBB"), Encrypted: true, CreatedAt: at(-time.Hour)},
		{ID: "expiring", Content: []byte("for a day\n"), CreatedAt: at(-time.Minute), ExpiresAt: at(24 * time.Hour)},
	}
}

// exportWith exports f at now with opts into memory.
func exportWith(t *testing.T, f *exportFSM, pages *ui.UI, now time.Time, opts ExportOptions) ([]byte, ExportStats) {
	t.Helper()
	var b bytes.Buffer
	st, err := WriteExportTail(context.Background(), &b, f.View(), pages, now, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), st
}

// TestPageCache: an export with the cache writes the same archive as one
// without, and the next export, an hour later, takes every page from the
// cache and still writes the archive an export without one would; a
// paste created since is rendered, and a deleted one leaves the file.
func TestPageCache(t *testing.T) {
	now := time.Now()
	f := newExportFSM()
	f.add(t, cachePastes(now)...)
	pages := mirrorPages(t)
	path := filepath.Join(t.TempDir(), "cache.cdb")
	cache := NewPageCache(path, nil, nil)

	plain, _ := exportWith(t, f, pages, now, ExportOptions{})
	first, st := exportWith(t, f, pages, now, ExportOptions{Cache: cache})
	if !bytes.Equal(first, plain) {
		t.Error("the export that fills the cache differs from one without a cache")
	}
	if st.Cached != 0 || st.Pastes != 5 {
		t.Errorf("first export: %d of %d pastes from the cache, want 0 of 5", st.Cached, st.Pastes)
	}
	if got := cachedKeys(t, path); got != 5 {
		t.Fatalf("the cache holds %d pastes, want 5", got)
	}

	later := now.Add(time.Hour)
	f.add(t, &fsm.Paste{ID: "new", Content: []byte("new since\n"), CreatedAt: later.UnixNano()})
	second, st := exportWith(t, f, pages, later, ExportOptions{Cache: cache})
	if st.Cached != 5 || st.Pastes != 6 {
		t.Errorf("second export: %d of %d pastes from the cache, want 5 of 6", st.Cached, st.Pastes)
	}
	if plain, _ := exportWith(t, f, pages, later, ExportOptions{}); !bytes.Equal(second, plain) {
		t.Error("the export from the cache differs from one without a cache")
	}
	if got := cachedKeys(t, path); got != 6 {
		t.Errorf("the cache holds %d pastes after the second export, want 6", got)
	}

	f.remove(t, "large", "noise")
	_, st = exportWith(t, f, pages, later, ExportOptions{Cache: cache})
	if st.Cached != 4 || st.Pastes != 4 {
		t.Errorf("after two deletes: %d of %d pastes from the cache, want 4 of 4", st.Cached, st.Pastes)
	}
	if got := cachedKeys(t, path); got != 4 {
		t.Errorf("the cache holds %d pastes after two deletes, want 4", got)
	}
	if left, _ := filepath.Glob(path + ".*"); len(left) != 0 {
		t.Errorf("files left beside the cache: %v", left)
	}
}

// cachedKeys counts the pastes in the cache file at path.
func cachedKeys(t *testing.T, path string) int {
	t.Helper()
	r, err := cdb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	err = r.ForEach(func(key, value []byte) error {
		if !bytes.Equal(key, cacheIdentityKey) {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// remove deletes the pastes with ids from f.
func (f *exportFSM) remove(tb testing.TB, ids ...string) {
	tb.Helper()
	for _, id := range ids {
		b, err := fsm.Encode(&fsm.Command{Type: fsm.TypeDelete, ID: id, Admin: true, Now: time.Now().UnixNano()})
		if err != nil {
			tb.Fatal(err)
		}
		f.index++
		res := f.ApplyBatch([]*raft.Log{{Index: f.index, Type: raft.LogCommand, Data: b}})
		if err := res[0].(*fsm.Result).Err; err != nil {
			tb.Fatalf("delete %s: %v", id, err)
		}
	}
}

// TestPageCacheOfAnotherUI: pages cached by a UI that renders them
// differently (under a base path) are not used by another, which writes
// its own archive.
func TestPageCacheOfAnotherUI(t *testing.T) {
	now := time.Now()
	f := newExportFSM()
	f.add(t, cachePastes(now)...)
	cache := NewPageCache(filepath.Join(t.TempDir(), "cache.cdb"), nil, nil)
	exportWith(t, f, mirrorPages(t), now, ExportOptions{Cache: cache})

	based, err := ui.New(ui.Options{Mirror: true, BasePath: "/paste"})
	if err != nil {
		t.Fatal(err)
	}
	got, st := exportWith(t, f, based, now, ExportOptions{Cache: cache})
	if st.Cached != 0 {
		t.Errorf("%d pages came from the cache of another UI", st.Cached)
	}
	if want, _ := exportWith(t, f, based, now, ExportOptions{}); !bytes.Equal(got, want) {
		t.Error("the archive differs from one made without the cache")
	}
}

// cacheFixture is where most cache tests start: the cachePastes in a
// state machine, their archive made without a cache (want), and a cache
// at path filled by one export.
type cacheFixture struct {
	now   time.Time
	f     *exportFSM
	pages *ui.UI
	path  string
	cache *PageCache
	want  []byte
}

func newCacheFixture(t *testing.T) *cacheFixture {
	t.Helper()
	c := &cacheFixture{now: time.Now(), f: newExportFSM(), pages: mirrorPages(t), path: filepath.Join(t.TempDir(), "cache.cdb")}
	c.f.add(t, cachePastes(c.now)...)
	c.cache = NewPageCache(c.path, nil, nil)
	c.want, _ = exportWith(t, c.f, c.pages, c.now, ExportOptions{})
	exportWith(t, c.f, c.pages, c.now, ExportOptions{Cache: c.cache})
	return c
}

// TestPageCacheNotForALiveUI: a UI whose pages say how long ago, as a
// live node's do, would have its pages served stale from the cache; an
// export with one neither reads nor writes it.
func TestPageCacheNotForALiveUI(t *testing.T) {
	c := newCacheFixture(t)
	live, err := ui.New(ui.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	got, st := exportWith(t, c.f, live, c.now, ExportOptions{Cache: c.cache})
	if st.Cached != 0 {
		t.Errorf("%d pages of a live UI came from the cache", st.Cached)
	}
	if want, _ := exportWith(t, c.f, live, c.now, ExportOptions{}); !bytes.Equal(got, want) {
		t.Error("the archive differs from one made without the cache")
	}
	if after, _ := os.ReadFile(c.path); !bytes.Equal(after, before) {
		t.Error("an export with a live UI wrote the cache")
	}
}

// TestPageCacheDamaged: a value that does not read back as written is
// made again, and a file that is not a cache at all is replaced; the
// archive is right either way.
func TestPageCacheDamaged(t *testing.T) {
	c := newCacheFixture(t)
	f, pages, path, cache, want, now := c.f, c.pages, c.path, c.cache, c.want, c.now

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Flip a byte in the middle of the first paste's value: the record
	// after the identity, whose key and value lengths lead it.
	r, err := cdb.NewReader(b)
	if err != nil {
		t.Fatal(err)
	}
	identity, _, _ := r.Get(cacheIdentityKey)
	first := 2048 + 8 + len(cacheIdentityKey) + len(identity)
	klen := int(b[first]) | int(b[first+1])<<8
	vlen := int(b[first+4]) | int(b[first+5])<<8
	b[first+8+klen+vlen/2] ^= 0x40
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, st := exportWith(t, f, pages, now, ExportOptions{Cache: cache})
	if st.Cached != 4 {
		t.Errorf("with one value damaged, %d pages came from the cache, want 4", st.Cached)
	}
	if !bytes.Equal(got, want) {
		t.Error("with one value damaged, the archive differs from one made without the cache")
	}

	if err := os.WriteFile(path, []byte("not a cache"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, st = exportWith(t, f, pages, now, ExportOptions{Cache: cache})
	if st.Cached != 0 || !bytes.Equal(got, want) {
		t.Errorf("over a file that is not a cache: %d cached, archive right %v; want 0, true", st.Cached, bytes.Equal(got, want))
	}
	if n := cachedKeys(t, path); n != 5 {
		t.Errorf("the file that was not a cache was replaced by one of %d pastes, want 5", n)
	}
}

// TestPageCacheRemovesAStaleNextFile: the next file of an export that a
// crash stopped is removed by the next export that writes one.
func TestPageCacheRemovesAStaleNextFile(t *testing.T) {
	c := newCacheFixture(t)
	stale := c.path + ".123456.tmp"
	if err := os.WriteFile(stale, []byte("half a cache"), 0o600); err != nil {
		t.Fatal(err)
	}
	exportWith(t, c.f, c.pages, c.now, ExportOptions{Cache: c.cache})
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale next file is still there (%v)", err)
	}
}

// TestPageCacheAfterAFailedExport: an export that fails leaves the last
// cache as it was, since its own lacks the pastes it did not reach.
func TestPageCacheAfterAFailedExport(t *testing.T) {
	c := newCacheFixture(t)
	f, pages, path, cache, now := c.f, c.pages, c.path, c.cache, c.now
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f.add(t, &fsm.Paste{ID: "zzz", Content: []byte("new\n"), CreatedAt: now.UnixNano()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := WriteExportTail(ctx, &bytes.Buffer{}, f.View(), pages, now, ExportOptions{Cache: cache}); err == nil {
		t.Fatal("an export with its context ended succeeded")
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Error("a failed export changed the cache")
	}
	if left, _ := filepath.Glob(path + ".*"); len(left) != 0 {
		t.Errorf("files left beside the cache: %v", left)
	}
}

// TestCachedValues: what appendCached writes parses back, and any flipped
// byte or cut is refused rather than served.
func TestCachedValues(t *testing.T) {
	for _, c := range []cached{
		{page: []byte("<html>page</html>"), pageGzip: true, meta: []byte(`{"id": "x"}`), raw: []byte("gzip of raw"), rawGzip: true},
		{page: []byte("<html>page</html>"), meta: []byte(`{"id": "x"}`)},
		{},
	} {
		v := appendCached([]byte("prefix"), c)[len("prefix"):]
		got, ok := parseCached(v)
		if !ok || !bytes.Equal(got.page, c.page) || !bytes.Equal(got.raw, c.raw) || !bytes.Equal(got.meta, c.meta) || got.pageGzip != c.pageGzip || got.rawGzip != c.rawGzip {
			t.Errorf("%+v read back as %+v, %v", c, got, ok)
		}
		for i := range v {
			bad := bytes.Clone(v)
			bad[i] ^= 1
			if _, ok := parseCached(bad); ok {
				t.Errorf("%+v with byte %d flipped parsed", c, i)
			}
		}
		for n := range len(v) {
			if _, ok := parseCached(v[:n]); ok {
				t.Errorf("%+v cut to %d bytes parsed", c, n)
			}
		}
	}
}

// TestCacheKeyCoversThePaste: every field of ui.Paste, which is all a
// page shows, changes the key. A field added to ui.Paste fails here until
// cacheKey hashes it.
func TestCacheKeyCoversThePaste(t *testing.T) {
	base := ui.Paste{ID: "a", Title: "t", Lang: "Go", Content: []byte("x"), CreatedAt: time.Unix(1, 0), ExpiresAt: time.Unix(2, 0)}
	changed := map[string]func(*ui.Paste){
		"ID":        func(p *ui.Paste) { p.ID = "b" },
		"Title":     func(p *ui.Paste) { p.Title = "u" },
		"Lang":      func(p *ui.Paste) { p.Lang = "" },
		"Content":   func(p *ui.Paste) { p.Content = []byte("y") },
		"CreatedAt": func(p *ui.Paste) { p.CreatedAt = p.CreatedAt.Add(1) },
		"ExpiresAt": func(p *ui.Paste) { p.ExpiresAt = time.Time{} },
		"Burn":      func(p *ui.Paste) { p.Burn = true },
		"Encrypted": func(p *ui.Paste) { p.Encrypted = true },
	}
	typ := reflect.TypeFor[ui.Paste]()
	for i := range typ.NumField() {
		if _, ok := changed[typ.Field(i).Name]; !ok {
			t.Errorf("ui.Paste.%s is not covered by this test, nor perhaps by cacheKey", typ.Field(i).Name)
		}
	}
	key := cacheKey(&base)
	seen := map[[sha256.Size]byte]string{key: "base"}
	for name, change := range changed {
		p := base
		change(&p)
		k := cacheKey(&p)
		if other, dup := seen[k]; dup {
			t.Errorf("changing %s gives the key of %s", name, other)
		}
		seen[k] = name
	}
	// Fields run into one another only with their lengths.
	a, b := base, base
	a.ID, a.Title = "ab", "c"
	b.ID, b.Title = "a", "bc"
	if cacheKey(&a) == cacheKey(&b) {
		t.Error("moving a byte from the title to the id keeps the key")
	}
}

// TestPageCacheConcurrentExports: exports that run at once each write the
// right archive; one of them writes the cache, which then serves the next.
func TestPageCacheConcurrentExports(t *testing.T) {
	c := newCacheFixture(t) // a cache to read while the next is written
	f, pages, path, cache, want, now := c.f, c.pages, c.path, c.cache, c.want, c.now

	const exports = 4
	got := make([][]byte, exports)
	errs := make([]error, exports)
	var wg sync.WaitGroup
	for i := range exports {
		wg.Go(func() {
			var b bytes.Buffer
			_, errs[i] = WriteExportTail(context.Background(), &b, f.View(), pages, now, ExportOptions{Cache: cache})
			got[i] = b.Bytes()
		})
	}
	wg.Wait()
	for i := range exports {
		if errs[i] != nil || !bytes.Equal(got[i], want) {
			t.Errorf("export %d: %v, archive right %v", i, errs[i], bytes.Equal(got[i], want))
		}
	}
	if _, st := exportWith(t, f, pages, now, ExportOptions{Cache: cache}); st.Cached != 5 {
		t.Errorf("after concurrent exports, %d of 5 pages came from the cache", st.Cached)
	}
	if left, _ := filepath.Glob(path + ".*"); len(left) != 0 {
		t.Errorf("files left beside the cache: %v", left)
	}
}

// TestPageCacheKeepsRoom: the cache is not written once its file system
// has no room to spare, and the export goes on without it; the last
// cache stays.
func TestPageCacheKeepsRoom(t *testing.T) {
	old := cacheRoomEvery
	cacheRoomEvery = 1 << 10 // less than the pastes' values
	t.Cleanup(func() { cacheRoomEvery = old })
	now := time.Now()
	f := newExportFSM()
	f.add(t, cachePastes(now)...)
	pages := mirrorPages(t)
	want, _ := exportWith(t, f, pages, now, ExportOptions{})
	path := filepath.Join(t.TempDir(), "cache.cdb")

	for _, yes := range []int{0, 1} { // no room at the start; none after the first ask
		asked := 0
		cache := NewPageCache(path, nil, func(n int64) bool {
			asked++
			return asked <= yes
		})
		got, _ := exportWith(t, f, pages, now, ExportOptions{Cache: cache})
		if !bytes.Equal(got, want) {
			t.Errorf("room for %d asks: the archive differs from one made without the cache", yes)
		}
		if asked != yes+1 {
			t.Errorf("room for %d asks: asked %d times, want %d", yes, asked, yes+1)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("room for %d asks: the cache was written (%v)", yes, err)
		}
		if left, _ := filepath.Glob(path + ".*"); len(left) != 0 {
			t.Errorf("files left beside the cache: %v", left)
		}
	}
}

// TestBuildHashIsTheRunningBinary: the cache's name for the build is the
// hash of the executable that runs, so that another build's pages are
// never taken for this one's.
func TestBuildHashIsTheRunningBinary(t *testing.T) {
	path, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); !bytes.Equal(buildHash(), sum[:]) {
		t.Errorf("buildHash %x, the executable's SHA-256 %x", buildHash(), sum)
	}
}
