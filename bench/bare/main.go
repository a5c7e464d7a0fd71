// Command bare is the baseline of make bench: a net/http server with no
// router and no middleware that answers every request with the bytes of
// one file, as text/plain, the least a Go HTTP server can do per read.
// With -like URL it also sends every header that URL answers with (Date
// aside, which net/http adds), so that its answers are the same bytes as
// that server's.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	file := flag.String("file", "", "the file whose bytes every answer carries")
	like := flag.String("like", "", "a URL whose answer's headers every answer carries too")
	flag.Parse()
	body, err := os.ReadFile(*file)
	if err != nil {
		fail(err)
	}
	header := http.Header{
		"Content-Type":   {"text/plain; charset=utf-8"},
		"Content-Length": {strconv.Itoa(len(body))},
	}
	if *like != "" {
		if header, err = headersOf(*like); err != nil {
			fail(err)
		}
	}
	err = http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for k, v := range header {
			h[k] = v
		}
		w.Write(body)
	}))
	fail(err)
}

// headersOf returns the headers of url's answer, without Date.
func headersOf(url string) (http.Header, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	resp.Header.Del("Date")
	return resp.Header, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bare:", err)
	os.Exit(1)
}
