//go:build !linux

package fsm

// adviseHuge does nothing where transparent huge pages are unknown.
func adviseHuge([]byte, bool) {}
