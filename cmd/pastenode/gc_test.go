package main

import (
	"runtime/debug"
	"testing"
)

func TestGCPercent(t *testing.T) {
	for _, tt := range []struct {
		live, extra uint64
		want        int
	}{
		{0, 0, 1000},
		{1 << 20, 0, 1000},
		{16 << 20, 0, 100},
		{32 << 20, 0, 50},
		{128 << 20, 0, 12},
		{256 << 20, 0, 12},
		{4 << 30, 0, 12},
		// Extra headroom (an export's) on a 150 MiB store, and on a
		// small one, where GOGC is capped.
		{150 << 20, 64 << 20, 55},
		{150 << 20, gcExportHeadroom, 97},
		{1 << 20, gcExportHeadroom, 1000},
	} {
		if got := gcPercent(tt.live, tt.extra); got != tt.want {
			t.Errorf("gcPercent(%d MiB, %d MiB) = %d, want %d", tt.live>>20, tt.extra>>20, got, tt.want)
		}
	}
}

func TestHoldHeadroom(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	gogc := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	tu := &gcTuner{live: 150 << 20}
	tu.apply()
	if got := gogc(); got != 12 {
		t.Fatalf("GOGC %d on a 150 MiB heap, want 12", got)
	}
	release := tu.hold()
	if got := gogc(); got != 97 {
		t.Errorf("GOGC %d while an export runs, want 97", got)
	}
	second := tu.hold()
	if got := gogc(); got != 97 {
		t.Errorf("GOGC %d while two exports run, want 97: they add their headroom once", got)
	}
	second()
	if got := gogc(); got != 97 {
		t.Errorf("GOGC %d while one of two exports still runs, want 97", got)
	}
	release()
	release() // a second call changes nothing
	if got := gogc(); got != 12 {
		t.Errorf("GOGC %d after the exports, want 12", got)
	}
}
