package api

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// colours returns the distinct colour escapes in s, resets left out.
func colours(s string) map[string]bool {
	set := map[string]bool{}
	for _, e := range regexp.MustCompile("\x1b\\[[0-9;]*m").FindAllString(s, -1) {
		if e != "\x1b[0m" {
			set[e] = true
		}
	}
	return set
}

func TestTerminalRead(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	code := "package main\n\nfunc main() {}\n"
	id, _ := create(t, tn.URL, []byte(code), "lang=go")

	for _, tc := range []struct{ query, accept, want string }{
		{"?fmt=ansi", "", "\x1b[38;5;"},
		{"?fmt=ansi16", "", "\x1b["},
		{"?fmt=truecolor", "", "\x1b[38;2;"},
		{"", "text/x-ansi", "\x1b[38;5;"},
		{"?fmt=ansi&lang=text", "", ""},
	} {
		r := do(t, http.MethodGet, tn.URL+"/"+id+tc.query, nil, "Accept", tc.accept)
		r.wantStatus(t, http.StatusOK)
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/x-ansi") {
			t.Errorf("%s: Content-Type %q, want text/x-ansi", tc.query, ct)
		}
		body := string(r.body)
		if tc.want != "" && !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: got %q, want escapes %q", tc.query, tc.accept, body, tc.want)
		}
		if tc.want == "" && len(colours(body)) > 1 {
			t.Errorf("%s: got %q, want plain text", tc.query, body)
		}
	}

	// Raw reads stay byte-exact.
	for _, path := range []string{"/raw/" + id, "/" + id} {
		if r := do(t, http.MethodGet, tn.URL+path, nil); string(r.body) != code {
			t.Errorf("GET %s: got %q, want the exact paste", path, r.body)
		}
	}

	r := do(t, http.MethodGet, tn.URL+"/"+id+"?fmt=sixel", nil)
	r.wantStatus(t, http.StatusBadRequest)
	r.wantReason(t, false)
	do(t, http.MethodGet, tn.URL+"/"+id+"?fmt=ansi&lang=nolang", nil).wantStatus(t, http.StatusBadRequest)
	do(t, http.MethodGet, tn.URL+"/nosuch?fmt=ansi", nil).wantStatus(t, http.StatusNotFound)
}

func TestTerminalReadNeverBurns(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	id, _ := create(t, tn.URL, []byte("secret"), "burn=true&lang=go")
	for range 2 {
		r := do(t, http.MethodGet, tn.URL+"/"+id+"?fmt=ansi", nil)
		r.wantStatus(t, http.StatusConflict)
		if reason := r.wantReason(t, false); !strings.Contains(reason, "/raw/"+id) || strings.Contains(reason, "secret") {
			t.Errorf("burn answer %q: want the raw URL and no content", reason)
		}
	}
	if r := do(t, http.MethodGet, tn.URL+"/raw/"+id, nil); string(r.body) != "secret" {
		t.Errorf("the burn paste after ansi reads: got %q, want it still there", r.body)
	}
}
