package main

import (
	"strings"
	"testing"
	"time"
)

func TestCompatFlags(t *testing.T) {
	base := []string{"--node-id", "n1", "--raft-addr", "127.0.0.1:7000"}
	noEnv := func(string) (string, bool) { return "", false }
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
		check   func(*config) bool
	}{
		{name: "defaults", check: func(c *config) bool { return c.IDLength == 10 && c.BasePath == "" && c.DefaultExpire == 0 }},
		{name: "default under max", args: []string{"--max-expire", "7d", "--default-expire", "1d"},
			check: func(c *config) bool { return c.DefaultExpire == 24*time.Hour && c.MaxExpire == 7*24*time.Hour }},
		{name: "default never", args: []string{"--default-expire", "never"}, check: func(c *config) bool { return c.DefaultExpire == 0 }},
		{name: "default over max", args: []string{"--max-expire", "1d", "--default-expire", "2d"}, wantErr: "--default-expire: 2d is longer than --max-expire"},
		{name: "default never with max", args: []string{"--max-expire", "1d", "--default-expire", "never"}, wantErr: "--default-expire: never is longer"},
		{name: "default bad", args: []string{"--default-expire", "soon"}, wantErr: "--default-expire"},
		{name: "id length", args: []string{"--id-length", "16"}, check: func(c *config) bool { return c.IDLength == 16 }},
		{name: "id length short", args: []string{"--id-length", "8"}, wantErr: "--id-length: 8: want 10 to 64"},
		{name: "base path", args: []string{"--base-path", "/paste/"}, check: func(c *config) bool { return c.BasePath == "/paste" }},
		{name: "base path env", env: map[string]string{"PASTE_BASE_PATH": "/p", "PASTE_ID_LENGTH": "12", "PASTE_DEFAULT_EXPIRE": "1h"},
			check: func(c *config) bool { return c.BasePath == "/p" && c.IDLength == 12 && c.DefaultExpire == time.Hour }},
		{name: "base path relative", args: []string{"--base-path", "paste"}, wantErr: "--base-path"},
		{name: "base path odd", args: []string{"--base-path", "/a b"}, wantErr: "--base-path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := noEnv
			if tt.env != nil {
				env = func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			}
			c, err := parseFlags(append(append([]string(nil), base...), tt.args...), env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Errorf("config %+v is not what the flags say", c)
			}
		})
	}
}
