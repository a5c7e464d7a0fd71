package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
)

type mirrorConfig struct {
	cdb       string
	httpAddr  string
	logLevel  slog.Level
	logFormat string
}

func parseMirrorFlags(args []string, env func(string) (string, bool), stderr io.Writer) (*mirrorConfig, error) {
	return nil, usageError{errors.New("mirror is not built yet")}
}

func runMirror(ctx context.Context, c *mirrorConfig, log *slog.Logger) error {
	return errors.New("mirror is not built yet")
}
