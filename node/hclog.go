package node

import (
	"context"
	"io"
	"log"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// hclogAdapter sends hashicorp/raft's hclog output to slog, so that the
// node has one logger. Raft logs chattily at info; the adapter's level
// (warn by default, as rqlite does) filters it.
type hclogAdapter struct {
	l     *slog.Logger
	name  string
	level hclog.Level
	args  []interface{}
}

func newHclog(l *slog.Logger, level hclog.Level) hclog.Logger {
	return &hclogAdapter{l: l, level: level}
}

// HCLogger returns an hclog.Logger that writes warnings and errors to l,
// for the HashiCorp libraries that log through hclog.
func HCLogger(l *slog.Logger) hclog.Logger { return newHclog(l, hclog.Warn) }

var hclogToSlog = map[hclog.Level]slog.Level{
	hclog.Trace: slog.LevelDebug - 4,
	hclog.Debug: slog.LevelDebug,
	hclog.Info:  slog.LevelInfo,
	hclog.Warn:  slog.LevelWarn,
	hclog.Error: slog.LevelError,
}

func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...interface{}) {
	if level < a.level || level == hclog.Off {
		return
	}
	sl, ok := hclogToSlog[level]
	if !ok {
		sl = slog.LevelInfo
	}
	if !a.l.Enabled(context.Background(), sl) {
		return
	}
	all := append(append([]interface{}{}, a.args...), args...)
	if a.name != "" {
		all = append(all, "logger", a.name)
	}
	a.l.Log(context.Background(), sl, msg, all...)
}

func (a *hclogAdapter) Trace(msg string, args ...interface{}) { a.Log(hclog.Trace, msg, args...) }
func (a *hclogAdapter) Debug(msg string, args ...interface{}) { a.Log(hclog.Debug, msg, args...) }
func (a *hclogAdapter) Info(msg string, args ...interface{})  { a.Log(hclog.Info, msg, args...) }
func (a *hclogAdapter) Warn(msg string, args ...interface{})  { a.Log(hclog.Warn, msg, args...) }
func (a *hclogAdapter) Error(msg string, args ...interface{}) { a.Log(hclog.Error, msg, args...) }

func (a *hclogAdapter) IsTrace() bool { return a.level <= hclog.Trace }
func (a *hclogAdapter) IsDebug() bool { return a.level <= hclog.Debug }
func (a *hclogAdapter) IsInfo() bool  { return a.level <= hclog.Info }
func (a *hclogAdapter) IsWarn() bool  { return a.level <= hclog.Warn }
func (a *hclogAdapter) IsError() bool { return a.level <= hclog.Error }

func (a *hclogAdapter) ImpliedArgs() []interface{} { return a.args }

func (a *hclogAdapter) With(args ...interface{}) hclog.Logger {
	c := *a
	c.args = append(append([]interface{}{}, a.args...), args...)
	return &c
}

func (a *hclogAdapter) Name() string { return a.name }

func (a *hclogAdapter) Named(name string) hclog.Logger {
	c := *a
	if c.name != "" {
		name = c.name + "." + name
	}
	c.name = name
	return &c
}

func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	c := *a
	c.name = name
	return &c
}

func (a *hclogAdapter) SetLevel(level hclog.Level) { a.level = level }
func (a *hclogAdapter) GetLevel() hclog.Level      { return a.level }

func (a *hclogAdapter) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return slog.NewLogLogger(a.l.Handler(), slog.LevelInfo)
}

func (a *hclogAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return a.StandardLogger(nil).Writer()
}
