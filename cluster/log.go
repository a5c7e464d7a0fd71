package cluster

import (
	"bytes"
	"context"
	"log"
	"log/slog"
)

// newMemberlistLogger bridges memberlist's "[LEVEL] memberlist: msg" lines
// into slog at their level.
func newMemberlistLogger(l *slog.Logger) *log.Logger {
	return log.New(levelWriter{l}, "", 0)
}

type levelWriter struct{ l *slog.Logger }

var levelPrefixes = []struct {
	prefix []byte
	level  slog.Level
}{
	{[]byte("[DEBUG] "), slog.LevelDebug},
	{[]byte("[INFO] "), slog.LevelInfo},
	{[]byte("[WARN] "), slog.LevelWarn},
	{[]byte("[ERR] "), slog.LevelError},
	{[]byte("[ERROR] "), slog.LevelError},
}

func (w levelWriter) Write(p []byte) (int, error) {
	msg, level := bytes.TrimSpace(p), slog.LevelInfo
	for _, lp := range levelPrefixes {
		if rest, ok := bytes.CutPrefix(msg, lp.prefix); ok {
			msg, level = rest, lp.level
			break
		}
	}
	msg = bytes.TrimPrefix(msg, []byte("memberlist: "))
	w.l.Log(context.Background(), level, string(msg))
	return len(p), nil
}
