package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestOutFileIgnoresLeftovers: a world-readable FILE.tmp, or a link planted
// at that name, neither lends its mode to a backup nor is written through.
func TestOutFileIgnoresLeftovers(t *testing.T) {
	dir := t.TempDir()
	final := filepath.Join(dir, "backup.pnb")
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, final+".tmp"); err != nil {
		t.Fatal(err)
	}
	f, err := createOut(final, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("secret"); err != nil {
		t.Fatal(err)
	}
	if err := f.commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the linked file now holds %q: written through the link", b)
	}
	st, err := os.Stat(final)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("backup mode %v, want 0600", st.Mode().Perm())
	}
}

// TestOutFileWritesBack: a long file is handed to the disk in pieces of at
// least writebackEvery bytes as it is written, each piece where the last
// ended, and the file is whole once committed.
func TestOutFileWritesBack(t *testing.T) {
	final := filepath.Join(t.TempDir(), "export.cdb")
	f, err := createOut(final, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	type span struct{ off, n int64 }
	var got []span
	f.writeback = func(fd uintptr, off, n int64) { got = append(got, span{off, n}) }
	chunk := make([]byte, 3<<20)
	for range 7 { // 21 MiB
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.commit(); err != nil {
		t.Fatal(err)
	}
	want := []span{{0, 9 << 20}, {9 << 20, 9 << 20}}
	if !slices.Equal(got, want) {
		t.Errorf("writebacks %v, want %v", got, want)
	}
	if st, err := os.Stat(final); err != nil || st.Size() != 21<<20 {
		t.Errorf("committed file: %v, %v; want 21 MiB", st, err)
	}
}
