package node

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// releaseMapping drops every mapping of the file at path from this
// process's page tables with MADV_DONTNEED, which for a shared file
// mapping discards no data: the next access faults the page in again from
// the page cache or the file. The caller keeps the mappings from changing
// meanwhile. It is best effort: a failure only leaves the pages resident.
func releaseMapping(path string) {
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		start, end, ok := mappingOf(sc.Text(), st.Ino)
		if ok {
			_, _, _ = unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_DONTNEED)
		}
	}
}

// mappingOf parses one line of /proc/self/maps ("start-end perms offset
// dev inode path") and returns its address range if it maps a shared file
// with inode ino.
func mappingOf(line string, ino uint64) (start, end uintptr, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 6 || len(fields[1]) < 4 || fields[1][3] != 's' {
		return 0, 0, false
	}
	if n, err := strconv.ParseUint(fields[4], 10, 64); err != nil || n != ino {
		return 0, 0, false
	}
	lo, hi, found := strings.Cut(fields[0], "-")
	s, err1 := strconv.ParseUint(lo, 16, 64)
	e, err2 := strconv.ParseUint(hi, 16, 64)
	if !found || err1 != nil || err2 != nil || e <= s {
		return 0, 0, false
	}
	return uintptr(s), uintptr(e), true
}
