package ui

import (
	"testing"
	"time"
)

func TestRelTime(t *testing.T) {
	tests := []struct {
		d    time.Duration // from now
		want string
	}{
		{0, "just now"},
		{-30 * time.Second, "just now"},
		{30 * time.Second, "in less than a minute"},
		{-time.Minute, "1 minute ago"},
		{-3 * time.Minute, "3 minutes ago"},
		{-3*time.Minute - 20*time.Second, "3 minutes ago"},
		{10 * time.Minute, "in 10 minutes"},
		{time.Hour - 3*time.Second, "in 1 hour"},
		{time.Hour, "in 1 hour"},
		{-5 * time.Hour, "5 hours ago"},
		{24 * time.Hour, "in 1 day"},
		{-3 * 24 * time.Hour, "3 days ago"},
		{7*24*time.Hour - time.Minute, "in 1 week"},
		{-14 * 24 * time.Hour, "2 weeks ago"},
		{-60 * 24 * time.Hour, "2 months ago"},
		{-400 * 24 * time.Hour, "1 year ago"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := relTime(now.Add(tt.d), now); got != tt.want {
				t.Errorf("relTime(now%+v) = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
}

func TestHumanSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 bytes"},
		{1, "1 byte"},
		{1023, "1023 bytes"},
		{1024, "1 KiB"},
		{1536, "1.5 KiB"},
		{10*1024 - 1, "10 KiB"},
		{256 << 10, "256 KiB"},
		{1 << 20, "1 MiB"},
		{5 << 30, "5 GiB"},
	}
	for _, tt := range tests {
		if got := humanSize(tt.n); got != tt.want {
			t.Errorf("humanSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
