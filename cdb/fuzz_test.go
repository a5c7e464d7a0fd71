package cdb

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the CDB and archive readers. They
// must never panic, and every error must say the data is corrupt (or, for
// the archive, not one).
func FuzzReader(f *testing.F) {
	must := func(err error) {
		f.Helper()
		if err != nil {
			f.Fatal(err)
		}
	}
	var file memFile
	aw, err := NewArchive(&file)
	must(err)
	gz, enc := Compress(bytes.Repeat([]byte("hello "), 200))
	must(aw.AddFile("/", 200, []Header{{"Content-Type", "text/html; charset=utf-8"}}, []byte("<p>hi")))
	must(aw.AddFile("/a", 200, []Header{{"Content-Encoding", enc}}, gz))
	must(aw.AddFile("/*", 404, []Header{{"ETag", "abc"}}, []byte("nope")))
	must(aw.AddRedirect("/old", "/a", 301))
	must(aw.Close())
	archive := file.b
	f.Add(archive)
	for _, n := range []int{0, 1, headerSize - 1, headerSize, headerSize + 9, len(archive) / 2, len(archive) - 1} {
		f.Add(archive[:n])
	}
	f.Add(writeCDB(f, []record{{"", ""}, {"k", "v"}, {"k", "w"}}))

	f.Fuzz(func(t *testing.T, b []byte) {
		checkCorrupt := func(what string, err error) {
			t.Helper()
			if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrSchema) {
				t.Fatalf("%s: error %v is neither ErrCorrupt nor ErrSchema", what, err)
			}
		}
		r, err := NewReader(b)
		checkCorrupt("NewReader", err)
		if err == nil {
			var keys [][]byte
			err := r.ForEach(func(k, v []byte) error {
				if len(keys) < 100 {
					keys = append(keys, k)
				}
				return nil
			})
			checkCorrupt("ForEach", err)
			for _, k := range append(keys, []byte("schema"), []byte("f:/"), nil) {
				_, _, err := r.Get(k)
				checkCorrupt("Get", err)
			}
		}

		a, err := NewArchiveFromBytes(b)
		checkCorrupt("NewArchiveFromBytes", err)
		if err != nil {
			return
		}
		paths, err := a.Paths()
		checkCorrupt("Paths", err)
		for _, p := range append(paths[:min(len(paths), 100)], "/", "/a", "/*", "/old") {
			res, _, err := a.Lookup(p)
			checkCorrupt("Lookup", err)
			res.ContentEncoding()
		}
	})
}
