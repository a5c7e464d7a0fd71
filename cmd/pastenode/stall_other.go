//go:build !linux

package main

import (
	"net"
	"time"
)

// socketStallLimit: elsewhere the server's WriteTimeout limits answers.
func socketStallLimit() bool { return false }

func setStallLimit(net.Conn, time.Duration) error { return nil }
