package cdb

import "testing"

// TestUniqueFilesAreNotFingerprinted: a unique file's body gets a record of
// its own even when another file has the same bytes, and is served as
// given; its metadata is still shared, and a plain file still shares a
// body it has in common with another.
func TestUniqueFilesAreNotFingerprinted(t *testing.T) {
	html := []Header{{"Content-Type", "text/html; charset=utf-8"}}
	path := writeArchive(t, func(aw *ArchiveWriter) error {
		for _, tt := range []struct {
			path   string
			unique bool
		}{{"/u1", true}, {"/u2", true}, {"/p1", false}, {"/p2", false}} {
			newFile := NewFile
			if tt.unique {
				newFile = NewUniqueFile
			}
			e, err := newFile(tt.path, 200, html, []byte("same bytes"))
			if err == nil {
				err = aw.Add(e)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	a, err := OpenArchive(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, p := range []string{"/u1", "/u2", "/p1", "/p2"} {
		res, ok, err := a.Lookup(p)
		if err != nil || !ok {
			t.Fatalf("Lookup(%s) = %v, %v", p, ok, err)
		}
		if string(res.Body) != "same bytes" {
			t.Errorf("%s body %q, want %q", p, res.Body, "same bytes")
		}
	}
	counts := map[byte]int{}
	if err := a.r.ForEach(func(k, v []byte) error { counts[k[0]]++; return nil }); err != nil {
		t.Fatal(err)
	}
	// A body each for the two unique files, one for the two others.
	if counts['d'] != 3 || counts['m'] != 1 {
		t.Errorf("%d bodies and %d metadata records, want 3 and 1", counts['d'], counts['m'])
	}
}

// TestUniqueFileMeta: a file made with metadata encoded once is the file
// NewUniqueFile makes with the same status and headers, shares the
// metadata record with it, and paths are checked as ever.
func TestUniqueFileMeta(t *testing.T) {
	headers := []Header{{"Cache-Control", "public, max-age=60"}, {"Content-Type", "text/html; charset=utf-8"}}
	meta, err := EncodeMeta(200, headers)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewUniqueFile("/a", 200, headers, []byte("body"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewUniqueFileMeta("/a", meta, []byte("body"))
	if err != nil {
		t.Fatal(err)
	}
	if a.key != b.key || string(a.meta) != string(b.meta) || a.metaSum != b.metaSum || string(a.body) != string(b.body) || a.unique != b.unique {
		t.Errorf("NewUniqueFileMeta made %+v, NewUniqueFile %+v", b, a)
	}
	if _, err := NewUniqueFileMeta("no slash", meta, nil); err == nil {
		t.Error("a path without a slash was taken")
	}
	if _, err := NewUniqueFileMeta("/b", Meta{}, nil); err == nil {
		t.Error("metadata not made by EncodeMeta was taken")
	}
	if _, err := EncodeMeta(99, nil); err == nil {
		t.Error("status 99 was encoded")
	}
}
