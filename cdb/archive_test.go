package cdb

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestHeaderTables(t *testing.T) {
	if got, want := len(headerNames), 0x7a; got != want {
		t.Errorf("%d header names, want %d", got, want)
	}
	if got, want := len(headerValues), 0x47; got != want {
		t.Errorf("%d header values, want %d", got, want)
	}
	for _, tt := range []struct {
		list []string
		id   int
		want string
	}{
		{headerNames[:], 0x01, "!Status"},
		{headerNames[:], 0x18, "Cache-Control"},
		{headerNames[:], 0x1d, "Content-Encoding"},
		{headerNames[:], 0x20, "Content-Length"},
		{headerNames[:], 0x26, "Content-Type"},
		{headerNames[:], 0x2c, "ETag"},
		{headerNames[:], 0x3f, "Location"},
		{headerNames[:], 0x7a, "X-XSS-Protection"},
		{headerValues[:], 0x01, "public, immutable, max-age=3600"},
		{headerValues[:], 0x0d, "200"},
		{headerValues[:], 0x0e, "404"},
		{headerValues[:], 0x0f, "text/plain; charset=utf-8"},
		{headerValues[:], 0x3b, "application/octet-stream"},
		{headerValues[:], 0x47, "application/x-rar-compressed"},
	} {
		if got := tt.list[tt.id-1]; got != tt.want {
			t.Errorf("id %#x is %q, want %q", tt.id, got, tt.want)
		}
	}
}

func TestEncodeMeta(t *testing.T) {
	etag := strings.Repeat("0123456789abcdef", 4)
	for _, tt := range []struct {
		name    string
		status  int
		headers []Header
		want    string
	}{
		{
			name:   "archiver file example",
			status: 200,
			headers: []Header{
				{"Cache-Control", "public, immutable, max-age=3600"},
				{"Content-Encoding", "identity"},
				{"Content-Type", "text/plain; charset=utf-8"},
			},
			want: "h0000001H000000dh0000018H0000001h000001dH0000003h0000026H000000f",
		},
		{
			name:   "archiver redirect example",
			status: 308,
			headers: []Header{
				{"Cache-Control", "public, immutable, max-age=3600"},
				{"Location", "/hello.txt"},
			},
			want: "h0000001Zaad308h0000018H0000001h000003fZaak/hello.txt",
		},
		{name: "404 only", status: 404, want: "h0000001H000000e"},
		{
			name:    "Go canonical names",
			status:  200,
			headers: []Header{{"Etag", etag}, {"X-Xss-Protection", "1; mode=block"}},
			want:    "h0000001H000000dh000002cZaco" + etag + "h000007aH000000b",
		},
		{
			name:    "repeated names keep their order",
			status:  200,
			headers: []Header{{"Vary", "b"}, {"Vary", "a"}},
			want:    "h0000001H000000dh0000065Zaabbh0000065Zaaba",
		},
		{
			name:    "longest inline value",
			status:  200,
			headers: []Header{{"Link", strings.Repeat("x", 4096)}},
			want:    "h0000001H000000dh000003eZgnv" + strings.Repeat("x", 4096),
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := encodeMeta(tt.status, tt.headers)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("encodeMeta = %q, want %q", got, tt.want)
			}
			status, headers, err := decodeMeta(got)
			if err != nil {
				t.Fatalf("decodeMeta: %v", err)
			}
			if status != tt.status {
				t.Errorf("decoded status %d, want %d", status, tt.status)
			}
			for i, h := range headers {
				if want := tt.headers[i]; !strings.EqualFold(h.Name, want.Name) || h.Value != want.Value {
					t.Errorf("decoded header %d = %q, want %q", i, h, want)
				}
			}
		})
	}
}

func TestEncodeMetaErrors(t *testing.T) {
	many := make([]Header, 128)
	for i := range many {
		many[i] = Header{"Vary", "x"}
	}
	for _, tt := range []struct {
		name    string
		status  int
		headers []Header
	}{
		{"status too low", 199, nil},
		{"status too high", 600, nil},
		{"unknown name", 200, []Header{{"X-Custom", "x"}}},
		{"content length", 200, []Header{{"content-length", "3"}}},
		{"status as header", 200, []Header{{"!Status", "200"}}},
		{"empty value", 200, []Header{{"Vary", ""}}},
		{"leading space", 200, []Header{{"Vary", " x"}}},
		{"trailing space", 200, []Header{{"Vary", "x "}}},
		{"double space", 200, []Header{{"Vary", "a  b"}}},
		{"tab", 200, []Header{{"Vary", "a\tb"}}},
		{"newline", 200, []Header{{"Vary", "a\r\nSet-Cookie: x"}}},
		{"not ASCII", 200, []Header{{"Vary", "é"}}},
		{"value too long", 200, []Header{{"Vary", strings.Repeat("x", 4097)}}},
		{"too many headers", 200, many},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := encodeMeta(tt.status, tt.headers); !errors.Is(err, ErrInvalidHeader) {
				t.Errorf("got %v, want ErrInvalidHeader", err)
			}
		})
	}
}

func TestDecodeMeta(t *testing.T) {
	if status, headers, err := decodeMeta(nil); status != 200 || headers != nil || err != nil {
		t.Errorf("decodeMeta(empty) = %d, %q, %v; want 200, none, nil", status, headers, err)
	}
	for _, meta := range []string{
		"h00000",                   // truncated name
		"h0000000H0000001",         // name id 0
		"h000007bH0000001",         // name id past the list
		"h000001AH0000001",         // upper-case hex
		"x0000018H0000001",         // not a name id
		"h0000018",                 // no value
		"h0000018H0000048",         // value id past the list
		"h0000018H00001",           // truncated value id
		"h0000018Zaa",              // truncated length
		"h0000018Zaaz",             // length digit past y
		"h0000018Zaadab",           // value shorter than its length
		"h0000018X",                // unknown value form
		"h0000001Zaad199",          // status out of range
		"h0000001Zaad+20",          // status not decimal
		"h0000001H0000001",         // status not a number
		"h0000001H000000dh0000018", // second entry without value
	} {
		if _, _, err := decodeMeta([]byte(meta)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeMeta(%q): got %v, want ErrCorrupt", meta, err)
		}
	}
}

type testFile struct {
	path     string
	status   int
	headers  []Header
	body     []byte
	redirect string // AddRedirect instead of AddFile
}

// writeArchive writes an archive file with what add adds and returns its
// path.
func writeArchive(t *testing.T, add func(aw *ArchiveWriter) error) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "archive.cdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	aw, err := NewArchive(f)
	if err == nil {
		err = add(aw)
	}
	if err == nil {
		err = aw.Close()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestArchiveRoundTrip(t *testing.T) {
	html := []Header{
		{"Cache-Control", "public, immutable, max-age=3600"},
		{"Content-Type", "text/html; charset=utf-8"},
	}
	text := bytes.Repeat([]byte("a paste that compresses well\n"), 100)
	gz, encoding := Compress(text)
	if encoding != "gzip" {
		t.Fatalf("Compress chose %s", encoding)
	}
	files := []testFile{
		{path: "/", status: 200, headers: html, body: []byte("<h1>pastes</h1>")},
		{path: "/index.html", status: 200, headers: html, body: []byte("<h1>pastes</h1>")},
		{path: "/p/abc", status: 200, body: gz, headers: []Header{
			{"Content-Encoding", "gzip"},
			{"Content-Type", "text/plain; charset=utf-8"},
			{"ETag", strings.Repeat("ab", 32)},
			{"Content-Disposition", `inline; filename="abc.txt"`},
		}},
		{path: "/p/empty", status: 200, headers: html},
		{path: "/*", status: 404, headers: []Header{{"Content-Type", "text/plain; charset=utf-8"}}, body: []byte("no such paste\n")},
		{path: "://example.test/host.txt", status: 200, body: []byte("<h1>pastes</h1>")},
		{path: "/old", status: 301, redirect: "/p/abc"},
		{path: "/older", status: 308, redirect: "/p/abc"},
	}

	path := writeArchive(t, func(aw *ArchiveWriter) error {
		for _, tf := range files {
			var err error
			if tf.redirect != "" {
				err = aw.AddRedirect(tf.path, tf.redirect, tf.status)
			} else {
				err = aw.AddFile(tf.path, tf.status, tf.headers, tf.body)
			}
			if err != nil {
				return fmt.Errorf("add %s: %w", tf.path, err)
			}
		}
		return nil
	})
	a, err := OpenArchive(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	for _, tf := range files {
		res, ok, err := a.Lookup(tf.path)
		if err != nil || !ok {
			t.Fatalf("Lookup(%s) = %v, %v", tf.path, ok, err)
		}
		wantHeaders := tf.headers
		if tf.redirect != "" {
			wantHeaders = []Header{{"Location", tf.redirect}}
		}
		if res.Status != tf.status {
			t.Errorf("%s: status %d, want %d", tf.path, res.Status, tf.status)
		}
		if !slices.Equal(res.Headers, wantHeaders) {
			t.Errorf("%s: headers %q, want %q", tf.path, res.Headers, wantHeaders)
		}
		if !bytes.Equal(res.Body, tf.body) {
			t.Errorf("%s: body %q, want %q", tf.path, res.Body, tf.body)
		}
	}

	res, _, _ := a.Lookup("/p/abc")
	if got := res.ContentEncoding(); got != "gzip" {
		t.Errorf("ContentEncoding = %q, want gzip", got)
	}
	if got := gunzipIf(t, res.ContentEncoding(), res.Body); !bytes.Equal(got, text) {
		t.Errorf("gunzipped body %q, want %q", got, text)
	}
	res, _, _ = a.Lookup("/")
	if got := res.ContentEncoding(); got != "identity" {
		t.Errorf("ContentEncoding without the header = %q, want identity", got)
	}
	if v, ok := res.Header("content-type"); !ok || v != "text/html; charset=utf-8" {
		t.Errorf("Header(content-type) = %q, %v", v, ok)
	}

	for _, missing := range []string{"/nope", "/p", "/p/abc/", "://example.test/", "/host.txt", "/index.htm"} {
		if _, ok, err := a.Lookup(missing); ok || err != nil {
			t.Errorf("Lookup(%s) = %v, %v; want not found", missing, ok, err)
		}
	}

	paths, err := a.Paths()
	if err != nil {
		t.Fatal(err)
	}
	wantPaths := []string{"/", "/*", "/index.html", "/p/abc", "/p/empty", "://example.test/host.txt"}
	if !slices.Equal(paths, wantPaths) {
		t.Errorf("Paths() = %q, want %q", paths, wantPaths)
	}

	// Count records by kind to check deduplication: "/", "/index.html"
	// and the host file share one body, the redirects and the empty paste
	// share the empty body, and "/", "/index.html" and the empty paste
	// share their metadata.
	counts := map[byte]int{}
	indexes := map[string]string{}
	err = a.r.ForEach(func(k, v []byte) error {
		counts[k[0]]++
		if len(k) == 8 && k[0] >= 'A' && k[0] <= 'Z' {
			indexes[string(k)] = string(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for kind, want := range map[byte]int{'s': 1, 'f': 6, 'r': 2, 'd': 4, 'm': 6, 'F': 1, 'L': 1, 'R': 1} {
		if counts[kind] != want {
			t.Errorf("%d records starting with %c, want %d", counts[kind], kind, want)
		}
	}
	wantIndexes := map[string]string{
		"F0000001": "/\n/*\n/index.html\n/p/abc\n/p/empty\n://example.test/host.txt\n",
		"L0000001": "",
		"R0000001": "/old\n/older\n",
	}
	for k, want := range wantIndexes {
		if got := indexes[k]; got != want {
			t.Errorf("index %s = %q, want %q", k, got, want)
		}
	}
}

// TestEntriesMatchAddFile makes entries on several goroutines, as an
// export does, and wants the same archive as AddFile writes, shared
// bodies and metadata included.
func TestEntriesMatchAddFile(t *testing.T) {
	html := []Header{{"Content-Type", "text/html; charset=utf-8"}}
	paths := []string{"/a", "/b", "/c", "/d"}
	bodies := [][]byte{[]byte("one"), []byte("two"), []byte("one"), nil}

	var direct memFile
	aw, err := NewArchive(&direct)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range paths {
		if err := aw.AddFile(p, 200, html, bodies[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}

	entries := make([]Entry, len(paths))
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Go(func() { entries[i], errs[i] = NewFile(p, 200, html, bodies[i]) })
	}
	wg.Wait()
	var prepared memFile
	if aw, err = NewArchive(&prepared); err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if err := aw.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(direct.b, prepared.b) {
		t.Error("archives of entries and of AddFile differ")
	}
}

func TestArchiveWriterErrors(t *testing.T) {
	var f memFile
	aw, err := NewArchive(&f)
	if err != nil {
		t.Fatal(err)
	}
	if err := aw.AddFile("/taken", 200, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		add  func() error
		want error
	}{
		{"empty path", func() error { return aw.AddFile("", 200, nil, nil) }, ErrInvalidPath},
		{"relative path", func() error { return aw.AddFile("a/b", 200, nil, nil) }, ErrInvalidPath},
		{"space", func() error { return aw.AddFile("/a b", 200, nil, nil) }, ErrInvalidPath},
		{"newline", func() error { return aw.AddFile("/a\n/b", 200, nil, nil) }, ErrInvalidPath},
		{"query", func() error { return aw.AddFile("/a?b", 200, nil, nil) }, ErrInvalidPath},
		{"host without path", func() error { return aw.AddFile("://host", 200, nil, nil) }, ErrInvalidPath},
		{"empty host", func() error { return aw.AddFile(":///a", 200, nil, nil) }, ErrInvalidPath},
		{"duplicate", func() error { return aw.AddFile("/taken", 200, nil, nil) }, ErrDuplicatePath},
		{"zero entry", func() error { return aw.Add(Entry{}) }, ErrInvalidPath},
		{"duplicate entry", func() error {
			e, err := NewFile("/taken", 200, nil, nil)
			if err != nil {
				return err
			}
			return aw.Add(e)
		}, ErrDuplicatePath},
		{"zero hash key", func() error { return aw.AddFile("/!#XItap", 200, nil, nil) }, ErrZeroHash},
		{"bad header", func() error { return aw.AddFile("/x", 200, []Header{{"X-Custom", "1"}}, nil) }, ErrInvalidHeader},
		{"redirect status", func() error { return aw.AddRedirect("/x", "/y", 200) }, ErrInvalidHeader},
		{"redirect location", func() error { return aw.AddRedirect("/x", "", 301) }, ErrInvalidHeader},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.add(); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	// The failures wrote nothing and the writer is still usable.
	if err := aw.AddFile("/x", 200, nil, []byte("x")); err != nil {
		t.Fatalf("AddFile after errors: %v", err)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := aw.AddFile("/y", 200, nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("AddFile after Close: got %v, want ErrClosed", err)
	}
	if err := aw.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: got %v, want ErrClosed", err)
	}
	a, err := NewArchiveFromBytes(f.b)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := a.Paths()
	if want := []string{"/taken", "/x"}; err != nil || !slices.Equal(paths, want) {
		t.Errorf("Paths() = %q, %v; want %q", paths, err, want)
	}
}

func TestArchiveReadErrors(t *testing.T) {
	schema := record{"schema", "kawipiko-2022a"}
	meta := record{"m0000001", "h0000001H000000d"}
	body := record{"d0000002", "body"}
	for _, tt := range []struct {
		name    string
		file    []byte
		openErr error  // from NewArchiveFromBytes
		path    string // looked up if the archive opens
		err     error  // from Lookup
	}{
		{name: "not a CDB", file: []byte("schema"), openErr: ErrCorrupt},
		{name: "no schema", file: writeCDB(t, nil), openErr: ErrSchema},
		{name: "other schema", file: writeCDB(t, []record{{"schema", "kawipiko-2021"}}), openErr: ErrSchema},
		{name: "short reference", path: "/a", err: ErrCorrupt,
			file: writeCDB(t, []record{schema, meta, body, {"f:/a", "m0000001d000000"}})},
		{name: "swapped reference", path: "/a", err: ErrCorrupt,
			file: writeCDB(t, []record{schema, meta, body, {"f:/a", "d0000002m0000001"}})},
		{name: "zero id", path: "/a", err: ErrCorrupt,
			file: writeCDB(t, []record{schema, meta, body, {"f:/a", "m\x00\x00\x00\x00\x00\x00\x00d0000002"}})},
		{name: "missing metadata", path: "/a", err: ErrCorrupt,
			file: writeCDB(t, []record{schema, body, {"f:/a", "m0000001d0000002"}})},
		{name: "missing body", path: "/a", err: ErrCorrupt,
			file: writeCDB(t, []record{schema, meta, {"f:/a", "m0000001d0000002"}})},
		{name: "bad metadata", path: "/a", err: ErrCorrupt,
			file: writeCDB(t, []record{schema, {"m0000001", "h0000001"}, body, {"f:/a", "m0000001d0000002"}})},
		{name: "foreign ids", path: "/a",
			file: writeCDB(t, []record{schema, {"mZZZZZZZ", ""}, {"dZZZZZZZ", ""}, {"f:/a", "mZZZZZZZdZZZZZZZ"}})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := NewArchiveFromBytes(tt.file)
			if !errors.Is(err, tt.openErr) {
				t.Fatalf("NewArchiveFromBytes: got %v, want %v", err, tt.openErr)
			}
			if err != nil {
				return
			}
			if _, _, err := a.Lookup(tt.path); !errors.Is(err, tt.err) {
				t.Errorf("Lookup(%s): got %v, want %v", tt.path, err, tt.err)
			}
		})
	}
}

func TestArchivePaths(t *testing.T) {
	schema := record{"schema", "kawipiko-2022a"}
	ref := "m0000001d0000002"
	for _, tt := range []struct {
		name    string
		records []record
		want    []string
		err     error
	}{
		{name: "no index walks keys", want: []string{"/a", "/b"},
			records: []record{schema, {"f:/b", ref}, {"r:/c", ref}, {"f:/a", ref}}},
		{name: "index order", want: []string{"/b", "/a"},
			records: []record{schema, {"f:/a", ref}, {"F0000001", "/b\n/a\n"}}},
		{name: "empty index", want: nil,
			records: []record{schema, {"f:/a", ref}, {"F0000001", ""}}},
		{name: "empty line", err: ErrCorrupt,
			records: []record{schema, {"F0000001", "/a\n\n/b\n"}}},
		{name: "no final newline", err: ErrCorrupt,
			records: []record{schema, {"F0000001", "/a\n/b"}}},
		{name: "only a newline", err: ErrCorrupt,
			records: []record{schema, {"F0000001", "\n"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := NewArchiveFromBytes(writeCDB(t, tt.records))
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.Paths()
			if !errors.Is(err, tt.err) {
				t.Fatalf("Paths: got %v, want %v", err, tt.err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Paths() = %q, want %q", got, tt.want)
			}
		})
	}
}

func BenchmarkLookup(b *testing.B) {
	var f memFile
	aw, err := NewArchive(&f)
	if err != nil {
		b.Fatal(err)
	}
	headers := []Header{{"Content-Type", "text/plain; charset=utf-8"}}
	if err := aw.AddFile("/p/abc", 200, headers, []byte("hello")); err != nil {
		b.Fatal(err)
	}
	if err := aw.Close(); err != nil {
		b.Fatal(err)
	}
	a, err := NewArchiveFromBytes(f.b)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := a.Lookup("/p/abc"); !ok || err != nil {
			b.Fatal("not found", err)
		}
	}
}

// TestArchiveWriterReserve checks that Reserve, before or between adds,
// keeps the paths already written (a second add of one is refused) and
// changes nothing in the archive.
func TestArchiveWriterReserve(t *testing.T) {
	build := func(reserve bool) []byte {
		var f memFile
		aw, err := NewArchive(&f)
		if err != nil {
			t.Fatal(err)
		}
		if reserve {
			aw.Reserve(4)
		}
		if err := aw.AddFile("/a", 200, nil, []byte("a")); err != nil {
			t.Fatal(err)
		}
		if reserve {
			aw.Reserve(1000)
		}
		if err := aw.AddFile("/a", 200, nil, []byte("a")); !errors.Is(err, ErrDuplicatePath) {
			t.Fatalf("second /a after Reserve: got %v, want ErrDuplicatePath", err)
		}
		for _, p := range []string{"/b", "/c"} {
			if err := aw.AddFile(p, 200, nil, []byte(p)); err != nil {
				t.Fatal(err)
			}
		}
		if err := aw.Close(); err != nil {
			t.Fatal(err)
		}
		return f.b
	}
	if !bytes.Equal(build(true), build(false)) {
		t.Error("an archive written after Reserve differs from one written without")
	}
}
