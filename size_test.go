package pastenode_test

import (
	"testing"

	"github.com/pastenode/pastenode"
)

func TestFormatSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 bytes"},
		{1, "1 byte"},
		{2, "2 bytes"},
		{1023, "1023 bytes"},
		{1024, "1 KiB"},
		{1536, "1.5 KiB"},
		{10*1024 - 1, "10 KiB"},
		{10 * 1024, "10 KiB"},
		{256 << 10, "256 KiB"},
		{1<<20 - 1, "1024 KiB"},
		{1 << 20, "1 MiB"},
		{3 << 20, "3 MiB"},
		{3<<20 + 300<<10, "3.3 MiB"},
		{5 << 30, "5 GiB"},
		{2 << 40, "2 TiB"},
		{3 << 50, "3072 TiB"},
	}
	for _, tt := range tests {
		if got := pastenode.FormatSize(tt.n); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
