package fsm

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on amd64 and arm64 with
// 4 KiB pages.
const hugePage = 2 << 20

// adviseHuge asks the kernel to back the whole huge pages within b with
// transparent huge pages, where it allows that on request
// (/sys/kernel/mm/transparent_hugepage/enabled set to madvise, as Debian's
// is, or always), or, with on false, no longer to. A restore fills its
// slabs at once, and a page fault per 4 KiB can be most of its time,
// where a huge page takes one fault for 2 MiB. It does nothing where the
// kernel reports its free memory to the hypervisor (hugePagesPay).
func adviseHuge(b []byte, on bool) {
	if hugePagesPay() {
		madviseHuge(b, on)
	}
}

// adviseFill prepares a slab that a restore is about to fill at once, or,
// with on false, takes back the huge page advice it gave: huge pages where
// they pay (adviseHuge), then every page of b made resident in one call
// (MADV_POPULATE_WRITE) rather than by a fault at the first write to each,
// which costs less than the faults, most on a virtual machine. A kernel
// before 5.14 refuses the advice, and the faults happen as before.
func adviseFill(b []byte, on bool) {
	adviseHuge(b, on)
	if on {
		populate(b)
	}
}

// populate makes the whole pages within b resident and writable, their
// bytes as they are.
func populate(b []byte) {
	if pages := wholePages(b, 4<<10); pages != nil {
		_ = unix.Madvise(pages, unix.MADV_POPULATE_WRITE)
	}
}

// madviseHuge gives the advice of adviseHuge.
func madviseHuge(b []byte, on bool) {
	advice := unix.MADV_NOHUGEPAGE
	if on {
		advice = unix.MADV_HUGEPAGE
	}
	if pages := wholePages(b, hugePage); pages != nil {
		_ = unix.Madvise(pages, advice)
	}
}

// wholePages is the part of b that whole pages of size bytes (a power of
// two) cover, or nil if b holds none.
func wholePages(b []byte, size uintptr) []byte {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := (base + size - 1) &^ (size - 1)
	end := (base + uintptr(len(b))) &^ (size - 1)
	if end <= start {
		return nil
	}
	return b[start-base : end-base]
}

// hugePagesPay reports whether a restore's slabs should get huge pages: not
// where the kernel hands free memory back to the hypervisor (free page
// reporting, as virtio-balloon does). It reports free blocks of 2 MiB, the
// ones a huge page is taken from, and the host drops their memory, so
// that the first write to a huge page faults on the host page by page:
// there a restore is slower with huge pages than without them, while
// elsewhere they make it quicker.
var hugePagesPay = sync.OnceValue(func() bool {
	return !freePagesReported("/sys/module/page_reporting/parameters/reported_kib")
})

// freePagesReported reports whether the kernel has reported free memory to
// its hypervisor, as the page_reporting module's count at path says.
func freePagesReported(path string) bool {
	raw, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	kib, err := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
	return err == nil && kib > 0
}
