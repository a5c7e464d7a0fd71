package main

import (
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// socketStallLimit: Linux closes a stalled connection itself.
const socketStallLimit = true

// setStallLimit sets TCP_USER_TIMEOUT on c: the kernel closes the
// connection once bytes sent on it have stayed unacknowledged, or unsent
// for a zero window, for d, and a blocked write then fails. Set once per
// connection, it costs a request nothing.
func setStallLimit(c net.Conn, d time.Duration) error {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return fmt.Errorf("stall limit: %T is not a TCP connection", c)
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	})
	if err != nil {
		return err
	}
	return serr
}
