package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pastenode/pastenode"
)

// importHandler is the fake's PUT /api/v1/pastes/{id}: it stores a paste
// under a free id, refuses the language "nobodys", and counts every call.
func (f *fakeNode) importHandler(admin func(string, http.HandlerFunc) http.HandlerFunc) http.HandlerFunc {
	importPaste := admin("import", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		switch _, taken := f.pastes[id]; {
		case taken:
			writeJSONError(w, http.StatusConflict, "paste id already taken")
		case r.URL.Query().Get("lang") == "nobodys":
			writeJSONError(w, http.StatusBadRequest, `unknown lang "nobodys"`)
		default:
			f.pastes[id], f.imports[id] = body, r.URL.Query()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(pastenode.Created{ID: id, URL: "http://" + r.Host + "/" + id, DeleteToken: "tok", Size: len(body)})
		}
	})
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.importTries++
		f.mu.Unlock()
		importPaste(w, r)
	}
}

// writeDir writes files, name to content, into a new directory.
func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runImport runs pastectl -o json import and decodes its summary.
func runImport(t *testing.T, addr, dir string, args ...string) (int, importSummary, string) {
	t.Helper()
	code, stdout, stderr := pastectl(t, "", append([]string{"--addr", addr, "--admin-token", "adm", "-o", "json", "import", dir}, args...)...)
	var sum importSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("import: exit %d, stdout %q, stderr %q: %v", code, stdout, stderr, err)
	}
	return code, sum, stderr
}

func TestImport(t *testing.T) {
	f, addr := newFake(t)
	f.adminToken = "adm"
	expires := time.Now().Add(24 * time.Hour).Truncate(time.Second).UTC()
	dir := writeDir(t, map[string]string{
		"plainOldId01": "no metadata\n",
		"withMeta0001": "binary \x00\xff kept",
		"withMeta0001.json": `{"title": "kept", "lang": "go", "created": "2020-02-29T12:00:00Z",
			"expires": ` + strconv.FormatInt(expires.Unix(), 10) + `, "burn": true, "encrypted": true}`,
		"expired00001":      "gone already",
		"expired00001.json": `{"expires": "2001-01-01T00:00:00Z"}`,
		"badLang00001":      "refused",
		"badLang00001.json": `{"lang": "nobodys"}`,
		".DS_Store":         "not a paste",
	})
	f.pastes["takenBefore1"] = []byte("already there")
	if err := os.WriteFile(filepath.Join(dir, "takenBefore1"), []byte("a copy"), 0o644); err != nil {
		t.Fatal(err)
	}

	code, sum, stderr := runImport(t, addr, dir, "--jobs", "2")
	if code != exitFailed || sum.Error != "1 of 5 pastes failed" || stderr != "" {
		t.Errorf("import with a refused paste: exit %d, summary error %q, stderr %q; want 1 saying one failed", code, sum.Error, stderr)
	}
	want := importSummary{Dir: dir, Pastes: 5, Imported: 2, Skipped: 1, Expired: 1, Failed: 1}
	if sum.Pastes != want.Pastes || sum.Imported != want.Imported || sum.Skipped != want.Skipped ||
		sum.Expired != want.Expired || sum.Failed != want.Failed || sum.Dir != dir {
		t.Errorf("summary: got %+v, want %+v", sum, want)
	}
	if len(sum.Errors) != 1 || sum.Errors[0].ID != "badLang00001" || !strings.Contains(sum.Errors[0].Error, "unknown lang") {
		t.Errorf("summary errors: got %+v, want badLang00001's reason", sum.Errors)
	}
	if got := string(f.pastes["withMeta0001"]); got != "binary \x00\xff kept" {
		t.Errorf("content stored: got %q, want every byte of the file", got)
	}
	if got := string(f.pastes["takenBefore1"]); got != "already there" {
		t.Errorf("a taken id: content %q, want the paste that was there", got)
	}
	q := f.imports["withMeta0001"]
	if q.Get("title") != "kept" || q.Get("lang") != "go" || q.Get("burn") != "true" || q.Get("encrypted") != "true" ||
		q.Get("created_at") != "2020-02-29T12:00:00Z" || q.Get("expires_at") != expires.Format(time.RFC3339) {
		t.Errorf("import of withMeta0001 sent %v; want its metadata", q)
	}
	if q := f.imports["plainOldId01"]; q.Has("created_at") || q.Has("expires_at") || q.Has("lang") {
		t.Errorf("import without metadata sent %v; want no options", q)
	}
	for _, id := range []string{"expired00001", ".DS_Store"} {
		if _, ok := f.pastes[id]; ok {
			t.Errorf("%s was sent", id)
		}
	}

	// Fixed and run again: only the paste that failed is stored now.
	if err := os.WriteFile(filepath.Join(dir, "badLang00001.json"), []byte(`{"lang": "python"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, sum, stderr = runImport(t, addr, dir)
	if code != exitOK || sum.Imported != 1 || sum.Skipped != 3 || sum.Expired != 1 || sum.Failed != 0 || len(sum.Errors) != 0 {
		t.Errorf("second import: exit %d, %+v, stderr %q; want 1 imported, 3 skipped", code, sum, stderr)
	}

	// The text summary.
	code, stdout, _ := pastectl(t, "", "--addr", addr, "--admin-token", "adm", "import", dir)
	if code != exitOK || !strings.HasPrefix(stdout, "imported 0 of 5 pastes from "+dir) || !strings.Contains(stdout, "4 already there, 1 expired, 0 failed") {
		t.Errorf("text summary: exit %d, %q", code, stdout)
	}
}

// A mistake in the directory stops the import before anything is sent,
// and an error that is not one paste's stops it at once.
func TestImportStops(t *testing.T) {
	f, addr := newFake(t)
	f.adminToken = "adm"
	for name, files := range map[string]map[string]string{
		"metadata without a paste": {"pasteHere001": "x", "orphan000001.json": "{}"},
		"unknown field":            {"pasteHere001": "x", "pasteHere001.json": `{"expiry": "1h"}`},
		"bad time":                 {"pasteHere001": "x", "pasteHere001.json": `{"expires": "tomorrow"}`},
		"not JSON":                 {"pasteHere001": "x", "pasteHere001.json": `title: x`},
	} {
		code, stdout, stderr := pastectl(t, "", "--addr", addr, "--admin-token", "adm", "import", writeDir(t, files))
		if code != exitFailed || stdout != "" || !strings.Contains(stderr, ".json") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1 naming the metadata file", name, code, stdout, stderr)
		}
	}
	if len(f.pastes) != 0 {
		t.Errorf("the fake holds %d pastes after refused directories, want none", len(f.pastes))
	}

	many := map[string]string{}
	for i := range 20 {
		many["pasteNumber"+strconv.Itoa(100+i)] = "x"
	}
	code, stdout, stderr := pastectl(t, "", "--addr", addr, "--admin-token", "wrong", "-o", "json", "import", writeDir(t, many), "--jobs", "1")
	if code != exitFailed || !strings.Contains(stdout, "admin token required") || !strings.Contains(stdout, `"status": 403`) {
		t.Errorf("wrong admin token: exit %d, stdout %q, stderr %q; want 1 and the server's reason in the summary", code, stdout, stderr)
	}
	f.mu.Lock()
	tries := f.importTries
	f.mu.Unlock()
	if tries != 1 || len(f.pastes) != 0 || !strings.Contains(stdout, `"pastes": 20`) {
		t.Errorf("after a refused token: %d import calls, %d pastes, summary %s; want the import stopped after the first", tries, len(f.pastes), stdout)
	}

	if code, _, stderr := pastectl(t, "", "--addr", addr, "import", t.TempDir(), "--jobs", "0"); code != exitUsage {
		t.Errorf("--jobs 0: exit %d, stderr %q; want a usage error", code, stderr)
	}
}
