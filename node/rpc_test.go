package node

import (
	"io"
	"strings"
	"testing"
)

func TestReadBody(t *testing.T) {
	body := strings.Repeat("b", 3000)
	for _, size := range []int64{-1, 0, 10, 3000, 5000, 1 << 40} {
		got, err := readBody(io.LimitReader(strings.NewReader(body), 4096), size, 4096)
		if err != nil || string(got) != body {
			t.Errorf("size %d: read %d bytes, %v; want all %d", size, len(got), err, len(body))
		}
	}
	allocs := func(size int64) float64 {
		return testing.AllocsPerRun(10, func() {
			_, _ = readBody(strings.NewReader(body), size, 4096)
		})
	}
	if sized, unsized := allocs(3000), allocs(-1); sized != 2 || unsized <= sized {
		t.Errorf("a body of known size took %v allocations (the reader and one buffer: want 2), one of unknown size %v", sized, unsized)
	}
}
