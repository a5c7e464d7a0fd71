package ui

import "testing"

func TestCheckBasePath(t *testing.T) {
	for p, ok := range map[string]bool{
		"": true, "/paste": true, "/a/b-c_d.e~f": true,
		"paste": false, "/paste/": false, "/": false, "//x": false, "/a//b": false,
		"/a b": false, "/a?b": false, "/a#b": false, "/a%20": false,
	} {
		if err := CheckBasePath(p); (err == nil) != ok {
			t.Errorf("CheckBasePath(%q) = %v; want ok %v", p, err, ok)
		}
	}
	if _, err := New(Options{BasePath: "nope"}); err == nil {
		t.Error("New took a bad base path")
	}
}

func TestDownloadName(t *testing.T) {
	for _, c := range []struct {
		p    Paste
		want string
	}{
		{Paste{ID: "abc", Lang: "Go"}, "abc.go"},
		{Paste{ID: "abc", Lang: "Python"}, "abc.py"},
		{Paste{ID: "abc"}, "abc.txt"},
		{Paste{ID: "abc", Lang: "Go", Encrypted: true}, "abc.txt"},
	} {
		if got := DownloadName(c.p); got != c.want {
			t.Errorf("DownloadName(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}
