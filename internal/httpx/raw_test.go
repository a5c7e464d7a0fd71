package httpx

import "testing"

func TestRawID(t *testing.T) {
	for path, want := range map[string]string{
		"/raw/abcdefgh":  "abcdefgh",
		"/raw/a":         "a",
		"/raw/..%2fx":    "..%2fx", // a path as decoded: the escape is the id's own
		"/raw/":          "",
		"/raw":           "",
		"/raw/a/":        "",
		"/raw/a/b":       "",
		"/rawabcdefgh":   "",
		"/abcdefgh":      "",
		"/x/raw/abcdefg": "",
	} {
		id, ok := RawID(path)
		if id != want || ok != (want != "") {
			t.Errorf("RawID(%q) = %q, %v; want %q, %v", path, id, ok, want, want != "")
		}
	}
}
