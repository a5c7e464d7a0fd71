package main

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// connLimitListener caps the connections open at once from each client
// address. A connection past the cap is closed at once, before any byte is
// read: one address cannot hold every file descriptor or goroutine of the
// node. Trusted proxies, which carry many clients' connections, are exempt.
type connLimitListener struct {
	net.Listener
	perIP  int
	exempt func(netip.Addr) bool

	mu   sync.Mutex
	open map[netip.Addr]int
}

func newConnLimitListener(ln net.Listener, perIP int, exempt func(netip.Addr) bool) net.Listener {
	if perIP <= 0 {
		return ln
	}
	return &connLimitListener{Listener: ln, perIP: perIP, exempt: exempt, open: map[netip.Addr]int{}}
}

// Accept returns the next connection within its address's cap.
func (l *connLimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ap, perr := netip.ParseAddrPort(c.RemoteAddr().String())
		if perr != nil {
			return c, nil
		}
		ip := ap.Addr().Unmap()
		if l.exempt != nil && l.exempt(ip) {
			return c, nil
		}
		if ip.Is6() {
			// One host may hold a whole /64: count it as one client, as
			// the rate limit does (api.ClientKey).
			ip = netip.PrefixFrom(ip, 64).Masked().Addr()
		}
		l.mu.Lock()
		if l.open[ip] >= l.perIP {
			l.mu.Unlock()
			// An RST rather than a slow close: nothing was read.
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
			c.SetDeadline(time.Now())
			c.Close()
			continue
		}
		l.open[ip]++
		l.mu.Unlock()
		return &limitedConn{Conn: c, release: func() { l.release(ip) }}, nil
	}
}

func (l *connLimitListener) release(ip netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip)
	}
}

// limitedConn gives its slot back when it is closed, once.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// CloseWrite half-closes a TCP connection, which net/http does before it
// closes one whose request body it did not read (a 413, say), so that the
// client reads the answer rather than a reset.
func (c *limitedConn) CloseWrite() error { return closeWrite(c.Conn) }

// closeWrite half-closes c, or the connection it wraps: net/http looks for
// CloseWrite on the connection it serves, which every wrapper must pass
// on (fasthttp's hijacked connection names the one it wraps UnsafeConn). It
// does nothing where nothing beneath can be half-closed.
func closeWrite(c net.Conn) error {
	switch c := c.(type) {
	case interface{ CloseWrite() error }:
		return c.CloseWrite()
	case interface{ UnsafeConn() net.Conn }:
		return closeWrite(c.UnsafeConn())
	}
	return nil
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
