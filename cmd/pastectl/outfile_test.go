package main

import (
	"os"
	"path/filepath"
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
