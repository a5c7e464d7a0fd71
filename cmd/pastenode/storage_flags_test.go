package main

import (
	"errors"
	"testing"
)

func TestStorageReserveFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want int64
	}{
		{nil, "", 32 << 20},
		{[]string{"--storage-reserve", "4MiB"}, "", 4 << 20},
		{[]string{"--storage-reserve", "0"}, "", -1},
		{nil, "100MB", 100_000_000},
	} {
		env := func(k string) (string, bool) {
			if k == "PASTE_STORAGE_RESERVE" && tc.env != "" {
				return tc.env, true
			}
			return "", false
		}
		c, err := parseFlags(append([]string{"--node-id", "n1"}, tc.args...), env)
		if err != nil || c.StorageReserve != tc.want {
			t.Errorf("%v env %q: got %v, %v; want %d", tc.args, tc.env, c, err, tc.want)
		}
	}
	if _, err := parseFlags([]string{"--storage-reserve", "lots"}, func(string) (string, bool) { return "", false }); !errors.As(err, new(usageError)) {
		t.Errorf("--storage-reserve lots: got %v, want a usage error", err)
	}
}
