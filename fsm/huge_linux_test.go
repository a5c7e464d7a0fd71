package fsm

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestAdviseHuge: the advice reaches the kernel, and is taken back.
func TestAdviseHuge(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("this kernel has no transparent huge pages:", err)
	}
	b := make([]byte, slabSize)
	madviseHuge(b, true)
	if flags := vmFlags(t, b); !strings.Contains(flags, " hg ") {
		t.Errorf("advised: VmFlags%s, want hg", flags)
	}
	madviseHuge(b, false)
	if flags := vmFlags(t, b); strings.Contains(flags, " hg ") || !strings.Contains(flags, " nh ") {
		t.Errorf("advice taken back: VmFlags%s, want nh", flags)
	}
}

// TestNoHugePagesWhereTheyDoNotPay: where hugePagesPay says no, a slab
// gets no advice at all.
func TestNoHugePagesWhereTheyDoNotPay(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("this kernel has no transparent huge pages:", err)
	}
	pay := hugePagesPay
	hugePagesPay = func() bool { return false }
	t.Cleanup(func() { hugePagesPay = pay })
	b := make([]byte, slabSize)
	adviseHuge(b, true)
	if flags := vmFlags(t, b); strings.Contains(flags, " hg ") {
		t.Errorf("advised where huge pages do not pay: VmFlags%s", flags)
	}
}

// TestPopulate: after populate, every whole page of a slab that no write
// has touched yet is resident, and the slab is still all zeros. The slab
// is a mapping of its own, so that none of its pages can be resident
// before (a slab from the heap may reuse pages an earlier test touched).
func TestPopulate(t *testing.T) {
	b, err := unix.Mmap(-1, 0, slabSize+100, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Skip("mmap:", err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	b = b[100:] // starts within a page, as a slab may
	page := wholePages(b, 4<<10)
	if len(page) != slabSize-4<<10 {
		t.Fatalf("whole pages: %d bytes of %d, want all but the two part pages", len(page), len(b))
	}
	if n := resident(t, page); n != 0 {
		t.Fatalf("%d pages of a new mapping resident before populate", n)
	}
	populate(b)
	if got, want := resident(t, page), len(page)>>12; got != want {
		if err := unix.Madvise(page, unix.MADV_POPULATE_WRITE); err != nil {
			t.Skip("this kernel does not populate on advice:", err)
		}
		t.Fatalf("populated: %d of %d pages resident", got, want)
	}
	if !bytes.Equal(b, make([]byte, len(b))) {
		t.Error("populate changed the slab's bytes")
	}
}

// resident counts the pages of page-aligned b that are in memory.
func resident(t *testing.T, b []byte) int {
	t.Helper()
	vec := make([]byte, (len(b)+4<<10-1)>>12)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if errno != 0 {
		t.Skip("mincore:", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

func TestFreePagesReported(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]bool{"6397972\n": true, "0\n": false, "": false, "n/a\n": false} {
		path := filepath.Join(dir, "reported_kib")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := freePagesReported(path); got != want {
			t.Errorf("reported_kib %q: freePagesReported = %v, want %v", content, got, want)
		}
	}
	if freePagesReported(filepath.Join(dir, "missing")) {
		t.Error("a kernel without page_reporting reported free pages")
	}
}

// vmFlags returns the VmFlags in smaps of the mapping that holds the first
// whole huge page in b, with a space on either side.
func vmFlags(t *testing.T, b []byte) string {
	t.Helper()
	at := (uintptr(unsafe.Pointer(unsafe.SliceData(b))) + hugePage - 1) &^ (hugePage - 1)
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := mappingRange(line); ok {
			in = lo <= at && at < hi
			continue
		}
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return flags + " "
		}
	}
	t.Fatalf("no mapping holds %#x: %v", at, sc.Err())
	return ""
}

// mappingRange parses the address range that starts a mapping's block in
// smaps ("7f00-7f10 rw-p ...").
func mappingRange(line string) (lo, hi uintptr, ok bool) {
	first, _, _ := strings.Cut(line, " ")
	l, h, found := strings.Cut(first, "-")
	if !found {
		return 0, 0, false
	}
	a, err1 := strconv.ParseUint(l, 16, 64)
	z, err2 := strconv.ParseUint(h, 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(a), uintptr(z), true
}
