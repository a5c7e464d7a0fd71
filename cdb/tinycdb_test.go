package cdb

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Interoperability with tinycdb's cdb tool (Debian package tinycdb).

// tinycdb returns the path of the cdb tool. Without it the test is
// skipped, except in CI, where a skipped interop test would hide a
// broken setup.
func tinycdb(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("cdb")
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("tinycdb's cdb tool is required in CI (apt-get install tinycdb): %v", err)
	}
	t.Skipf("tinycdb's cdb tool is not installed: %v", err)
	return ""
}

// cdbmake formats records as cdbmake input, which is also what cdb -d
// prints: "+klen,dlen:key->data\n" per record, then an empty line.
func cdbmake(records []record) []byte {
	var b bytes.Buffer
	for _, r := range records {
		fmt.Fprintf(&b, "+%d,%d:%s->%s\n", len(r.key), len(r.value), r.key, r.value)
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// interopRecords exercises what a text format could get wrong: empty keys
// and values, separators, newlines and binary bytes.
var interopRecords = []record{
	{"schema", "kawipiko-2022a"},
	{"", "empty key"},
	{"empty value", ""},
	{"->:+,", "separators\n"},
	{"\x00\xff\r\n", "\x00binary\xff"},
	{"f:/hello.txt", "m0000001d0000002"},
}

func TestTinycdbReadsOurFile(t *testing.T) {
	bin := tinycdb(t)
	records := interopRecords
	for i := range 300 {
		records = append(records, record{fmt.Sprintf("k%d", i), fmt.Sprint(i * i)})
	}
	path := filepath.Join(t.TempDir(), "ours.cdb")
	if err := os.WriteFile(path, writeCDB(t, records), 0o600); err != nil {
		t.Fatal(err)
	}

	dump, err := exec.Command(bin, "-d", path).Output()
	if err != nil {
		t.Fatalf("cdb -d: %v", err)
	}
	if want := cdbmake(records); !bytes.Equal(dump, want) {
		t.Errorf("cdb -d printed\n%q\nwant\n%q", dump, want)
	}

	for _, r := range records[:10] {
		if bytes.IndexByte([]byte(r.key), 0) >= 0 {
			continue // cannot be passed as an argument
		}
		got, err := exec.Command(bin, "-q", "--", path, r.key).Output()
		if err != nil {
			t.Fatalf("cdb -q %q: %v", r.key, err)
		}
		if string(got) != r.value {
			t.Errorf("cdb -q %q printed %q, want %q", r.key, got, r.value)
		}
	}

	// cdb -q exits with 100 when the key is not found.
	err = exec.Command(bin, "-q", path, "no such key").Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 100 {
		t.Errorf("cdb -q of a missing key: got %v, want exit status 100", err)
	}
}

func TestWeReadTinycdbFile(t *testing.T) {
	bin := tinycdb(t)
	records := interopRecords
	for i := range 3000 {
		records = append(records, record{fmt.Sprintf("/paste/%d", i), fmt.Sprintf("%x", i)})
	}
	path := filepath.Join(t.TempDir(), "tinycdb.cdb")
	cmd := exec.Command(bin, "-c", path)
	cmd.Stdin = bytes.NewReader(cdbmake(records))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cdb -c: %v: %s", err, out)
	}

	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	checkRecords(t, r, records, "/paste/3000", "f:/hello", "schem")
}

func TestTinycdbReadsOurArchive(t *testing.T) {
	bin := tinycdb(t)
	headers := []Header{{"Content-Type", "text/plain; charset=utf-8"}}
	path := writeArchive(t, func(aw *ArchiveWriter) error {
		for _, p := range []string{"/hello", "/hello.txt"} {
			if err := aw.AddFile(p, 200, headers, []byte("hello\n")); err != nil {
				return err
			}
		}
		return nil
	})

	for _, tt := range []struct{ key, want string }{
		{"schema", "kawipiko-2022a"},
		{"f:/hello", "m0000001d0000002"},
		{"f:/hello.txt", "m0000001d0000002"},
		{"m0000001", "h0000001H000000dh0000026H000000f"},
		{"d0000002", "hello\n"},
		{"F0000001", "/hello\n/hello.txt\n"},
		{"L0000001", ""},
		{"R0000001", ""},
	} {
		got, err := exec.Command(bin, "-q", path, tt.key).Output()
		if err != nil {
			t.Fatalf("cdb -q %s: %v", tt.key, err)
		}
		if string(got) != tt.want {
			t.Errorf("cdb -q %s printed %q, want %q", tt.key, got, tt.want)
		}
	}
}
