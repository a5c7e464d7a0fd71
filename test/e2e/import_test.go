package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// oldPaste is one paste of the old pastebins that the migration moves.
type oldPaste struct {
	id      string
	content []byte
	meta    map[string]any // the ID.json beside it; nil: none
	created time.Time      // zero: none given
	expires time.Time      // zero: never
	expired bool           // already past its expiry: never imported
}

// nanoidAlphabet is the alphabet of the old Rust pastebin's ids, look-alikes
// and all.
const nanoidAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"

// oldPastes makes n pastes as the old pastebins left them: the Rust
// pastebin's 21-character ids and Pastey's UUIDs; text and binary content;
// some encrypted by the old page, some with a title and a language, some
// that expire, a few that already did.
func oldPastes(t *testing.T, n int) []oldPaste {
	t.Helper()
	rng := mrand.New(mrand.NewPCG(49, 1000)) // the same set on every run
	now := time.Now().UTC().Truncate(time.Second)
	out := make([]oldPaste, n)
	for i := range out {
		p := &out[i]
		if i%4 == 3 {
			p.id = fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", rng.Uint32(), rng.Uint32N(1<<16), rng.Uint32N(1<<12),
				0x8000|rng.Uint32N(1<<14), rng.Uint64N(1<<48))
		} else {
			b := make([]byte, 21)
			for j := range b {
				b[j] = nanoidAlphabet[rng.IntN(len(nanoidAlphabet))]
			}
			p.id = string(b)
		}
		p.content = make([]byte, 1+rng.IntN(3000))
		if _, err := rand.Read(p.content); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 { // text, not bytes
			p.content = []byte(base64.StdEncoding.EncodeToString(p.content) + "\n")
		}
		meta := map[string]any{}
		if i%10 == 1 {
			// What the old page's CryptoJS stored: base64 of Salted__ and
			// the ciphertext, opaque to the server.
			p.content = []byte("U2FsdGVkX1" + base64.StdEncoding.EncodeToString(p.content[:min(len(p.content), 64)]))
			meta["encrypted"] = true
		}
		if i%5 == 2 {
			meta["title"], meta["lang"] = "old paste "+strconv.Itoa(i), []string{"python", "markup", "go"}[i%3]
		}
		if i%2 == 0 {
			p.created = now.Add(-time.Duration(1+rng.IntN(5*365*24)) * time.Hour)
			meta["created"] = p.created.Format(time.RFC3339)
		}
		switch {
		case i%50 == 7:
			p.expires, p.expired = now.Add(-time.Hour), true
			meta["expires"] = p.expires.Format(time.RFC3339)
		case i%7 == 0:
			p.expires = now.Add(time.Duration(2+rng.IntN(72)) * time.Hour)
			if i%2 == 0 {
				meta["expires"] = p.expires.Format(time.RFC3339)
			} else {
				meta["expires"] = p.expires.Unix() // Unix seconds, as the old pastebin kept them
			}
		}
		if len(meta) > 0 {
			p.meta = meta
		}
	}
	return out
}

// writeOldPastes writes pastes as pastectl import reads them: a file per
// paste named by its id, and its metadata beside it.
func writeOldPastes(t *testing.T, pastes []oldPaste) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range pastes {
		if err := os.WriteFile(filepath.Join(dir, p.id), p.content, 0o644); err != nil {
			t.Fatal(err)
		}
		if p.meta == nil {
			continue
		}
		b, err := json.Marshal(p.meta)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p.id+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// importSummary is what pastectl -o json import prints.
type importSummary struct {
	Pastes, Imported, Skipped, Expired, Failed int
	Errors                                     []struct{ ID, Error string }
}

func importDir(t *testing.T, p *proc, token, dir string) importSummary {
	t.Helper()
	r := pastectl(t, p.URL, nil, "--admin-token", token, "-o", "json", "import", dir, "--jobs", "8")
	var sum importSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 {
		t.Fatalf("import via %s: exit %d, stdout %.500q, stderr %.500q (%v)", p.id, r.code, r.stdout, r.stderr, err)
	}
	return sum
}

// storeOf reads the paste count and bytes that node p holds.
func storeOf(t *testing.T, p *proc) (pastes, bytes int64) {
	t.Helper()
	r := do(t, http.MethodGet, p.URL+"/api/v1/status", nil).expect(t, "status of "+p.id, http.StatusOK)
	var st struct {
		Store struct{ Pastes, Bytes int64 } `json:"store"`
	}
	if err := json.Unmarshal(r.body, &st); err != nil {
		t.Fatal(err)
	}
	return st.Store.Pastes, st.Store.Bytes
}

// TestImportIntoCluster moves 1,000 pastes of the old pastebins, with their
// ids, into a three-node cluster through pastectl: every old URL then
// answers the same bytes on every node, with the times the pastes had,
// and importing the same directory again adds nothing.
func TestImportIntoCluster(t *testing.T) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	tok, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	token := "import-" + tok.String()
	nodes := startCluster(t, "imp", 3, "--cluster-key", base64.StdEncoding.EncodeToString(key), "--admin-token", token)
	eventually(t, 20*time.Second, "one leader for all", func() error { _, err := leaderOf(t, nodes); return err })

	pastes := oldPastes(t, 1000)
	dir := writeOldPastes(t, pastes)
	expired := 0
	for _, p := range pastes {
		if p.expired {
			expired++
		}
	}

	sum := importDir(t, nodes[1], token, dir)
	if sum.Pastes != 1000 || sum.Imported != 1000-expired || sum.Skipped != 0 || sum.Expired != expired || sum.Failed != 0 {
		t.Fatalf("first import: %+v; want %d imported and %d expired of 1000", sum, 1000-expired, expired)
	}

	// Every old URL, on every node: /ID and /pastes/ID as curl reads them,
	// /raw/ID, and /download/ID as an attachment.
	for _, p := range pastes {
		for _, n := range nodes {
			for _, path := range []string{"/" + p.id, "/raw/" + p.id, "/pastes/" + p.id, "/download/" + p.id} {
				r := do(t, http.MethodGet, n.URL+path, nil)
				switch {
				case p.expired && r.code != http.StatusNotFound:
					t.Fatalf("GET %s on %s: status %d for a paste that had expired, want 404", path, n.id, r.code)
				case p.expired:
				case r.code != http.StatusOK || !bytes.Equal(r.body, p.content):
					t.Fatalf("GET %s on %s: status %d, %d bytes; want 200 and the %d bytes of the old paste", path, n.id, r.code, len(r.body), len(p.content))
				case strings.HasPrefix(path, "/download/") && r.header.Get("Content-Type") != "application/octet-stream":
					t.Fatalf("GET %s on %s: Content-Type %q, want an octet-stream download", path, n.id, r.header.Get("Content-Type"))
				}
			}
		}
	}

	// The times, labels and flags the pastes had.
	for i, p := range pastes {
		if p.expired {
			continue
		}
		m := metaOf(t, nodes[i%3].URL, p.id)
		if p.meta != nil && p.meta["encrypted"] == true && m["encrypted"] != true {
			t.Errorf("%s: not marked encrypted", p.id)
		}
		if title, ok := p.meta["title"]; ok && m["title"] != title {
			t.Errorf("%s: title %v, want %v", p.id, m["title"], title)
		}
		if !p.created.IsZero() && m["created_at"] != p.created.Format(time.RFC3339) {
			t.Errorf("%s: created_at %v, want %s", p.id, m["created_at"], p.created.Format(time.RFC3339))
		}
		want := any(nil)
		if !p.expires.IsZero() {
			want = p.expires.Format(time.RFC3339)
		}
		if m["expires_at"] != want {
			t.Errorf("%s: expires_at %v, want %v", p.id, m["expires_at"], want)
		}
	}

	// Again, through another node: every paste is already there.
	var before [3][2]int64
	for i, n := range nodes {
		before[i][0], before[i][1] = storeOf(t, n)
	}
	sum = importDir(t, nodes[2], token, dir)
	if sum.Imported != 0 || sum.Skipped != 1000-expired || sum.Expired != expired || sum.Failed != 0 {
		t.Fatalf("second import: %+v; want nothing imported and %d skipped", sum, 1000-expired)
	}
	for i, n := range nodes {
		if count, size := storeOf(t, n); count != before[i][0] || size != before[i][1] || count < int64(1000-expired) {
			t.Errorf("%s holds %d pastes, %d bytes after the second import; before it %d, %d", n.id, count, size, before[i][0], before[i][1])
		}
	}
}
