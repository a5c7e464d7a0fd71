package fsm

import (
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
// slabs at once, and a page fault per 4 KiB was most of its time on a
// virtual machine here: 100 MB of slabs took 25k faults, and a huge page
// takes one fault for 2 MiB (BENCHMARKS.md).
func adviseHuge(b []byte, on bool) {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := (base + hugePage - 1) &^ (hugePage - 1)
	end := (base + uintptr(len(b))) &^ (hugePage - 1)
	if end <= start {
		return
	}
	advice := unix.MADV_NOHUGEPAGE
	if on {
		advice = unix.MADV_HUGEPAGE
	}
	_ = unix.Madvise(b[start-base:end-base], advice)
}
