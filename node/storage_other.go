//go:build !unix

package node

// diskFree does not know the free space here: only failed writes refuse
// creates.
func diskFree(string) (int64, bool) { return 0, false }
