//go:build !linux

package fsm

// adviseFill does nothing where neither transparent huge pages nor
// populating advice are known.
func adviseFill([]byte, bool) {}

// populate does nothing where populating advice is not known.
func populate([]byte) {}
