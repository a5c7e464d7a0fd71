package main

import (
	"encoding/json"
	"testing"

	"github.com/pastenode/pastenode/internal/buildinfo"
)

func TestVersion(t *testing.T) {
	want := "pastectl version " + buildinfo.Read().String() + "\n"
	for _, args := range [][]string{{"--version"}, {"version"}} {
		if code, stdout, stderr := pastectl(t, "", args...); code != 0 || stdout != want || stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 0 and %q", args, code, stdout, stderr, want)
		}
	}
	code, stdout, _ := pastectl(t, "", "-o", "json", "version")
	var got struct {
		Build    string `json:"build"`
		Version  string `json:"version"`
		Revision string `json:"revision"`
	}
	in := buildinfo.Read()
	if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil ||
		got.Build != in.String() || got.Version != in.Version || got.Revision != in.Revision {
		t.Errorf("-o json version: exit %d, %q (%v); want the build %+v", code, stdout, err, in)
	}
}
