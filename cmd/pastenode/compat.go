package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pastenode/pastenode/api"
	"github.com/pastenode/pastenode/node"
	"github.com/pastenode/pastenode/ui"
)

// parseDefaultExpire reads --default-expire: "" (unset), "never", or a
// duration no longer than --max-expire.
func (c *config) parseDefaultExpire(text string) error {
	v := strings.ToLower(strings.TrimSpace(text))
	switch v {
	case "":
		return nil
	case "never", "0":
		if c.MaxExpire > 0 {
			return badFlag("default-expire", fmt.Errorf("never is longer than --max-expire %s", c.MaxExpire))
		}
		return nil
	}
	d, err := api.ParseDuration(v)
	if err != nil {
		return badFlag("default-expire", err)
	}
	if d < time.Second {
		return badFlag("default-expire", errors.New("the shortest is 1s"))
	}
	if c.MaxExpire > 0 && d > c.MaxExpire {
		return badFlag("default-expire", fmt.Errorf("%s is longer than --max-expire %s", text, c.MaxExpire))
	}
	c.DefaultExpire = d
	return nil
}

// checkCompat checks --base-path and --id-length, the flags that map the
// old pastebins' --uri-prefix and --slug-len.
func (c *config) checkCompat() error {
	c.BasePath = strings.TrimRight(c.BasePath, "/")
	if err := ui.CheckBasePath(c.BasePath); err != nil {
		return badFlag("base-path", err)
	}
	if c.IDLength < node.IDLen || c.IDLength > node.MaxIDLen {
		return badFlag("id-length", fmt.Errorf("%d: want %d to %d characters; shorter ids could be guessed", c.IDLength, node.IDLen, node.MaxIDLen))
	}
	return nil
}
