package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestAddr: every address is on loopback, below the ephemeral range, never
// handed out twice, and a node can bind it for TCP and for UDP.
func TestAddr(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		addr := Addr(t)
		host, p, err := net.SplitHostPort(addr)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("Addr() = %q: want a 127.0.0.1 address", addr)
		}
		port, _ := strconv.Atoi(p)
		if port < lowest || port >= ephemeralLow() {
			t.Fatalf("Addr() = %q: port outside [%d, %d)", addr, lowest, ephemeralLow())
		}
		if seen[addr] {
			t.Fatalf("Addr() handed out %s twice", addr)
		}
		seen[addr] = true
		if !free(addr) {
			t.Fatalf("%s is not free for both TCP and UDP", addr)
		}
	}
}

// TestFreeSeesUDP: a port held for UDP alone is not free, as gossip would
// fail to bind it.
func TestFreeSeesUDP(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if free(pc.LocalAddr().String()) {
		t.Fatalf("free(%s) with the UDP port held: got true", pc.LocalAddr())
	}
}
