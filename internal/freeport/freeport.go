// Package freeport hands tests loopback addresses for the nodes they start.
//
// A port from "127.0.0.1:0" is free only until the kernel gives it to some
// outgoing connection as its local port, and it is checked for TCP alone,
// while gossip binds the same port for UDP too. A node that a test stops
// and starts again on its old address, or whose gossip port another test
// binary's traffic holds for UDP, then fails to start. Addr draws its ports
// from below the kernel's ephemeral range instead, checks both protocols,
// and hands each port out once per test binary.
package freeport

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// lowest is the lowest port Addr hands out: below it lie the well-known
// and registered ports services on the machine are likelier to hold.
const lowest = 10000

var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// Addr returns a 127.0.0.1 address whose port is free for both TCP and UDP
// now, lies below the ephemeral range, and was not handed out before in
// this process. It fails tb when it finds none.
func Addr(tb testing.TB) string {
	tb.Helper()
	high := ephemeralLow()
	if high <= lowest {
		tb.Fatalf("the ephemeral port range starts at %d: no room below it", high)
	}
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 1000 {
		port := lowest + rand.IntN(high-lowest)
		if handedOut.ports[port] {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if !free(addr) {
			continue
		}
		handedOut.ports[port] = true
		return addr
	}
	tb.Fatalf("no loopback port in [%d, %d) free for both TCP and UDP", lowest, high)
	return ""
}

// free reports whether addr can be bound for TCP and for UDP.
func free(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer ln.Close()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	pc.Close()
	return true
}

// ephemeralLow returns the lowest port the kernel hands out for outgoing
// connections: Linux's ip_local_port_range, else the IANA range's start.
func ephemeralLow() int {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil {
				return lo
			}
		}
	}
	return 49152
}
