package ui

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func TestStatic(t *testing.T) {
	u := newUI(t, Options{})
	h := http.StripPrefix("/static/", u.Static())
	css, js := u.assets["app.css"].version, u.assets["app.js"].version

	tests := []struct {
		name, method, url string
		header            map[string]string
		wantStatus        int
		wantType          string
		wantCache         string
		wantBody          []string
	}{
		{"css", "GET", "/static/app.css", nil, 200, "text/css; charset=utf-8", "no-cache",
			[]string{"prefers-color-scheme: dark", "#paste .ln::before", ".chroma .kd"}},
		{"css versioned", "GET", "/static/app.css?v=" + css, nil, 200, "text/css; charset=utf-8", "public, max-age=31536000, immutable", nil},
		{"css old version", "GET", "/static/app.css?v=0ld", nil, 200, "text/css; charset=utf-8", "no-cache", nil},
		{"js", "GET", "/static/app.js?v=" + js, nil, 200, "text/javascript; charset=utf-8", "public, max-age=31536000, immutable",
			[]string{"pn1.k.", "AES-GCM", "PBKDF2"}},
		{"head", "HEAD", "/static/app.js", nil, 200, "text/javascript; charset=utf-8", "no-cache", nil},
		{"revalidate", "GET", "/static/app.js", map[string]string{"If-None-Match": `"` + js + `"`}, 304, "", "no-cache", nil},
		{"unknown", "GET", "/static/nope.js", nil, 404, "", "", nil},
		{"directory", "GET", "/static/", nil, 404, "", "", nil},
		{"post", "POST", "/static/app.js", nil, 405, "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.url, nil)
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d", rec.Code, tt.wantStatus)
			}
			if tt.wantType != "" {
				if got := rec.Header().Get("Content-Type"); got != tt.wantType {
					t.Errorf("Content-Type = %q, want %q", got, tt.wantType)
				}
				if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
					t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
				}
			}
			if got := rec.Header().Get("Cache-Control"); tt.wantCache != "" && got != tt.wantCache {
				t.Errorf("Cache-Control = %q, want %q", got, tt.wantCache)
			}
			if tt.method == "HEAD" && rec.Body.Len() != 0 {
				t.Errorf("HEAD has a body")
			}
			for _, s := range tt.wantBody {
				if !strings.Contains(rec.Body.String(), s) {
					t.Errorf("body lacks %q", s)
				}
			}
		})
	}
}

// TestAssetURLs checks that the pages ask for the assets by their current
// version, which the handler lets browsers cache for good.
func TestAssetURLs(t *testing.T) {
	u := newUI(t, Options{})
	var b strings.Builder
	if err := u.Error(&b, 500, "boom"); err != nil {
		t.Fatal(err)
	}
	h := http.StripPrefix("/static/", u.Static())
	for _, name := range []string{"app.css", "app.js"} {
		m := regexp.MustCompile(`"(/static/` + regexp.QuoteMeta(name) + `\?v=[0-9a-f]+)"`).FindStringSubmatch(b.String())
		if m == nil {
			t.Fatalf("page does not link %s", name)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", m[1], nil))
		if got := rec.Header().Get("Cache-Control"); rec.Code != 200 || !strings.Contains(got, "immutable") {
			t.Errorf("GET %s: %d, Cache-Control %q; want 200 and immutable", m[1], rec.Code, got)
		}
	}
}
