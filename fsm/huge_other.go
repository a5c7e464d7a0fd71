//go:build !linux

package fsm

// adviseFill does nothing where neither transparent huge pages nor
// populating advice are known.
func adviseFill([]byte, bool) {}
