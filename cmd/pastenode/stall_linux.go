package main

import (
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// socketStallLimit reports whether the kernel closes a stalled connection
// itself: Linux does, unless a sandbox refuses TCP_USER_TIMEOUT (gVisor,
// a seccomp profile), which a throwaway socket finds out once. Where it
// does not, the server's WriteTimeout limits answers instead.
var socketStallLimit = sync.OnceValue(func() bool {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, 1000) == nil
})

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
