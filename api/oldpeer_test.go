package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pastenode/pastenode/node"
)

func TestOldPeerIsAnUnavailableWithItsReason(t *testing.T) {
	code, msg := statusOf(fmt.Errorf("propose: %w", node.ErrOldPeer))
	if code != http.StatusServiceUnavailable || !strings.Contains(msg, "upgrade every node") {
		t.Fatalf("statusOf(ErrOldPeer) = %d %q, want 503 saying to upgrade", code, msg)
	}
}
