package fsm

import (
	"bytes"
	"errors"
	"testing"
)

// TestClusterIdentity checks that the first TypeInitCluster gives the
// cluster its id and admin token for good, that a later one changes
// neither (two leaders racing to initialise agree on the first), and that
// TypeAdminToken rotates the token alone.
func TestClusterIdentity(t *testing.T) {
	l := newLog(t)
	if got := l.f.Cluster(); got != "" {
		t.Fatalf("new FSM: cluster %q, want none", got)
	}
	if l.f.IsAdminToken("") || l.f.IsAdminToken("first") {
		t.Fatal("a cluster without an admin token accepts one")
	}
	l.apply(&Command{Type: TypeInitCluster, ID: "c1", TokenHash: HashToken("first")})
	l.apply(&Command{Type: TypeInitCluster, ID: "c2", TokenHash: HashToken("second")})
	if got := l.f.Cluster(); got != "c1" {
		t.Errorf("cluster %q after two inits, want the first, c1", got)
	}
	if !l.f.IsAdminToken("first") || l.f.IsAdminToken("second") {
		t.Error("the second init changed the admin token")
	}
	l.apply(&Command{Type: TypeAdminToken, TokenHash: HashToken("rotated")})
	if !l.f.IsAdminToken("rotated") || l.f.IsAdminToken("first") {
		t.Error("TypeAdminToken did not replace the admin token")
	}
	if got := l.f.Cluster(); got != "c1" {
		t.Errorf("cluster %q after a rotation, want c1", got)
	}

	restored := New()
	if err := restored.Restore(readCloser(snapshotBytes(t, l.f))); err != nil {
		t.Fatal(err)
	}
	if got := restored.Cluster(); got != "c1" || !restored.IsAdminToken("rotated") {
		t.Errorf("restored: cluster %q, admin token kept %v; want c1, true", got, restored.IsAdminToken("rotated"))
	}
}

func TestClusterCommandsNeedATokenHash(t *testing.T) {
	for _, c := range []*Command{
		{Type: TypeInitCluster, ID: "c1"},
		{Type: TypeInitCluster, TokenHash: HashToken("x")},
		{Type: TypeAdminToken, TokenHash: []byte("short")},
	} {
		b, _ := Encode(c)
		if _, err := Decode(b); !errors.Is(err, ErrBadCommand) {
			t.Errorf("Decode(%s id=%q hash=%d bytes) = %v, want ErrBadCommand", c.Type, c.ID, len(c.TokenHash), err)
		}
	}
}

func readCloser(b []byte) *nopCloser { return &nopCloser{bytes.NewReader(b)} }

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
