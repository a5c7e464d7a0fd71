package client

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/pastenode/pastenode"
)

// Error is a non-2xx answer from a node.
type Error struct {
	StatusCode int
	Message    string // the server's one-line reason, may be empty
}

func (e *Error) Error() string {
	s := strconv.Itoa(e.StatusCode)
	if text := http.StatusText(e.StatusCode); text != "" {
		s += " " + text
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// errorFrom reads an error answer: the one-line reason is the "error" field
// of a JSON body, else the first line of the text.
func errorFrom(resp *http.Response) *Error {
	e := &Error{StatusCode: resp.StatusCode}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	b = bytes.TrimSpace(b)
	if isJSON(resp.Header) || bytes.HasPrefix(b, []byte("{")) {
		var eb pastenode.ErrorBody
		if json.Unmarshal(b, &eb) == nil && eb.Error != "" {
			e.Message = eb.Error
			return e
		}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	e.Message = strings.TrimSpace(line)
	return e
}
