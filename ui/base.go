package ui

import (
	"fmt"
	"strings"
)

// CheckBasePath reports whether p can be a base path: "" (the root), or a
// path like "/paste" that starts with a slash, does not end with one and
// holds nothing a URL would have to escape.
func CheckBasePath(p string) error {
	if p == "" {
		return nil
	}
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return fmt.Errorf("base path %q: want a path like /paste, with no slash at the end", p)
	}
	for _, c := range p {
		ok := c == '/' || c == '-' || c == '_' || c == '.' || c == '~' ||
			('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
		if !ok || strings.Contains(p, "//") {
			return fmt.Errorf("base path %q: only letters, digits, - _ . ~ and single slashes", p)
		}
	}
	return nil
}

// DownloadName is the file name a download of p is offered under: its id
// and the usual extension of its language, ".txt" for plain text and for
// encrypted pastes.
func DownloadName(p Paste) string {
	if p.Encrypted {
		return p.ID + ".txt"
	}
	return p.ID + fileExt(p.Lang)
}
