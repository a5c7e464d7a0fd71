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
