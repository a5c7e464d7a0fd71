// Command bare is the baseline of make bench: a net/http server with no
// router and no middleware that answers every request with the bytes of
// one file, as text/plain, the least a Go HTTP server can do per read.
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
	flag.Parse()
	body, err := os.ReadFile(*file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bare:", err)
		os.Exit(2)
	}
	size := strconv.Itoa(len(body))
	err = http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{"text/plain; charset=utf-8"}
		h["Content-Length"] = []string{size}
		w.Write(body)
	}))
	fmt.Fprintln(os.Stderr, "bare:", err)
	os.Exit(1)
}
