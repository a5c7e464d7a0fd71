package main

import "testing"

func TestGCPercent(t *testing.T) {
	for _, tt := range []struct {
		live uint64
		want int
	}{
		{0, 1000},
		{1 << 20, 1000},
		{16 << 20, 100},
		{32 << 20, 50},
		{128 << 20, 12},
		{256 << 20, 12},
		{4 << 30, 12},
	} {
		if got := gcPercent(tt.live); got != tt.want {
			t.Errorf("gcPercent(%d MiB) = %d, want %d", tt.live>>20, got, tt.want)
		}
	}
}
