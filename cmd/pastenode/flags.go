package main

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pastenode/pastenode/api"
	"github.com/pastenode/pastenode/node"
)

// config is everything the flags say.
type config struct {
	NodeID          string
	DataDir         string
	HTTPAddr        string
	RaftAddr        string
	GossipAddr      string
	AdvertiseHost   string
	Join            []string
	BootstrapExpect int
	PublicURL       string
	MaxPasteSize    int64
	MaxExpire       time.Duration
	DefaultExpire   time.Duration
	BasePath        string
	IDLength        int
	ClusterKey      []byte
	InsecureCluster bool
	AdminToken      string
	TLSCert         string
	TLSKey          string
	RateLimit       int
	MaxStoreBytes   int64 // 0: no limit
	MaxConnsPerIP   int   // 0: no limit
	TrustedProxies  []netip.Prefix
	CreateTokens    string
	StorageReserve  int64 // -1: off
	PurgeAfter      time.Duration
	Log             logConfig
	TimeScale       float64
	ReadLease       time.Duration
}

// flagText holds the flags that config keeps in parsed form, as given.
type flagText struct {
	join, maxSize, maxExpire, defaultExpire, key, reserve, maxStore, proxies string
}

// parseFlags reads the command line, then the PASTE_* environment for every
// flag the command line did not set.
func parseFlags(args []string, env func(string) (string, bool)) (*config, error) {
	var (
		c    config
		text flagText
	)
	fs, checkLog := c.flagSet(&text)
	if err := parseWithEnv(fs, args, env); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageError{helpHint{fmt.Errorf("unexpected argument %q", fs.Arg(0)), fs.Name()}}
	}
	if err := c.parseText(text); err != nil {
		return nil, err
	}
	if err := checkLog(); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return &c, nil
}

// flagSet returns the flags of a node, into c and text; check reads the
// log flags once they are parsed.
func (c *config) flagSet(text *flagText) (fs *flag.FlagSet, check func() error) {
	fs = newFlagSet("pastenode")
	c.addFlags(fs, text)
	return fs, c.Log.addFlags(fs)
}

// addFlags defines every flag but the log flags on fs, into c and text.
func (c *config) addFlags(fs *flag.FlagSet, text *flagText) {
	host, _ := os.Hostname()
	fs.StringVar(&c.NodeID, "node-id", host, "unique, stable node name")
	fs.StringVar(&c.DataDir, "data-dir", "./pastenode-data", "Raft log, snapshots and node state")
	fs.StringVar(&c.HTTPAddr, "http-addr", "127.0.0.1:8080", "public HTTP API and web UI")
	fs.StringVar(&c.RaftAddr, "raft-addr", "127.0.0.1:7000", "Raft transport and internal RPC")
	fs.StringVar(&c.GossipAddr, "gossip-addr", "127.0.0.1:7946", "memberlist gossip (TCP and UDP)")
	fs.StringVar(&c.AdvertiseHost, "advertise-host", "", "host peers dial (default: host of the bind address; needed for 0.0.0.0)")
	fs.StringVar(&text.join, "join", "", "comma-separated gossip seeds host:port")
	fs.IntVar(&c.BootstrapExpect, "bootstrap-expect", 1, "1: form a cluster alone; N>1: wait for N nodes; 0: wait to be added")
	fs.StringVar(&c.PublicURL, "public-url", "", "base of the URLs creates return (default: from the request)")
	fs.StringVar(&text.maxSize, "max-paste-size", "1MiB", "largest paste accepted")
	fs.StringVar(&text.maxExpire, "max-expire", "0", "longest expiry accepted; 0: no limit")
	fs.StringVar(&text.defaultExpire, "default-expire", "", "expiry of pastes created without one (default: --max-expire, or never)")
	fs.StringVar(&c.BasePath, "base-path", "", "path prefix every route is served under, e.g. /paste (default: the root)")
	fs.IntVar(&c.IDLength, "id-length", node.IDLen, "characters in new paste ids, at least 10")
	fs.StringVar(&text.key, "cluster-key", "", "base64 key of 16, 24 or 32 bytes: encrypts and authenticates node-to-node traffic")
	fs.BoolVar(&c.InsecureCluster, "insecure-cluster", false, "allow non-loopback --raft-addr/--gossip-addr without --cluster-key: anyone who reaches them can write to the cluster")
	fs.StringVar(&c.AdminToken, "admin-token", "", "bearer token for admin calls (default: generated into DATA_DIR/admin-token)")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "certificate file: serve HTTPS")
	fs.StringVar(&c.TLSKey, "tls-key", "", "private key file for --tls-cert")
	fs.IntVar(&c.RateLimit, "rate-limit", defaultRateLimit, "writes (creates, deletes, reveals, admin writes) per minute per client IP; 0: off")
	fs.StringVar(&text.maxStore, "max-store-bytes", "", "paste content the store may hold before creates get 507 (default: the data dir's file system less --storage-reserve; 0: no limit)")
	fs.IntVar(&c.MaxConnsPerIP, "max-conns-per-ip", defaultMaxConnsPerIP, "HTTP connections open at once per client IP; 0: no limit")
	fs.StringVar(&text.proxies, "trusted-proxies", "", "comma-separated CIDRs or IPs of reverse proxies whose X-Forwarded-* headers are believed")
	fs.StringVar(&c.CreateTokens, "create-tokens", "", "file of tokens that creates need, one TOKEN or NAME:TOKEN a line; re-read when it changes (default: anyone may create)")
	fs.StringVar(&text.reserve, "storage-reserve", "32MiB", "free space the data dir keeps for deletes and Raft: creates get 507 below it; 0: off")
	fs.DurationVar(&c.PurgeAfter, "purge-after", node.DefaultPurgeAfter, "longest time the content of a deleted, burned or expired paste stays in the data dir's files; 0: only as compaction reclaims space")
	fs.Float64Var(&c.TimeScale, "raft-time-scale", 1, "multiplies Raft's timeouts (more for slow machines)")
	fs.DurationVar(&c.ReadLease, "read-lease", node.DefaultReadLease, "how long a node serves local hits without hearing from the leader; a cut-off node stops serving after it")
}

// Defaults of the flood limits.
const (
	defaultRateLimit     = 60
	defaultMaxConnsPerIP = 64
)

// badFlag is a usage error about the value of one flag.
func badFlag(name string, err error) error {
	return usageError{fmt.Errorf("--%s: %w", name, err)}
}

// parseText fills in the config's parsed fields from their flags' text.
func (c *config) parseText(text flagText) error {
	var err error
	if c.MaxPasteSize, err = parseSize(text.maxSize); err != nil {
		return badFlag("max-paste-size", err)
	}
	c.StorageReserve = -1
	if text.reserve != "0" {
		if c.StorageReserve, err = parseSize(text.reserve); err != nil {
			return badFlag("storage-reserve", err)
		}
	}
	if text.maxExpire != "0" {
		if c.MaxExpire, err = api.ParseDuration(text.maxExpire); err != nil {
			return badFlag("max-expire", err)
		}
	}
	if err := c.parseDefaultExpire(text.defaultExpire); err != nil {
		return err
	}
	if text.key != "" {
		if c.ClusterKey, err = base64.StdEncoding.DecodeString(text.key); err != nil {
			return badFlag("cluster-key", errors.New("not valid base64"))
		}
		if err := node.CheckClusterKey(c.ClusterKey); err != nil {
			return badFlag("cluster-key", err)
		}
	}
	for _, s := range strings.Split(text.join, ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.Join = append(c.Join, s)
		}
	}
	switch text.maxStore {
	case "":
		c.MaxStoreBytes = defaultMaxStoreBytes(c.DataDir, c.StorageReserve)
	case "0":
	default:
		if c.MaxStoreBytes, err = parseSize(text.maxStore); err != nil {
			return badFlag("max-store-bytes", err)
		}
	}
	if c.TrustedProxies, err = parsePrefixes(text.proxies); err != nil {
		return badFlag("trusted-proxies", err)
	}
	return nil
}

// parsePrefixes reads a comma-separated list of CIDRs; a bare IP is a
// prefix of its full length.
func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if a, err := netip.ParseAddr(f); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an IP nor a CIDR like 10.0.0.0/8", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// check refuses flags that do not go together, and derives the advertise
// host from --raft-addr when none is given.
func (c *config) check() error {
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return usageError{errors.New("--tls-cert and --tls-key go together")}
	}
	for name, addr := range map[string]string{"http-addr": c.HTTPAddr, "raft-addr": c.RaftAddr, "gossip-addr": c.GossipAddr} {
		if err := checkHostPort(addr, true); err != nil {
			return badFlag(name, err)
		}
	}
	for _, seed := range c.Join {
		if err := checkHostPort(seed, false); err != nil {
			return badFlag("join", err)
		}
	}
	if c.AdvertiseHost == "" {
		host, _, _ := net.SplitHostPort(c.RaftAddr)
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			return usageError{fmt.Errorf("--raft-addr %s binds every interface: set --advertise-host to the name or address peers dial", c.RaftAddr)}
		}
		c.AdvertiseHost = host
	}
	if c.NodeID == "" {
		return usageError{errors.New("--node-id is empty and the host name is unknown")}
	}
	if len(c.ClusterKey) == 0 && !c.InsecureCluster {
		for _, f := range []struct{ name, addr string }{{"raft-addr", c.RaftAddr}, {"gossip-addr", c.GossipAddr}} {
			if !node.IsLoopback(f.addr) {
				return usageError{fmt.Errorf("--%s %s is not loopback: %w", f.name, f.addr, node.ErrNeedKey)}
			}
		}
	}
	if c.RateLimit < 0 {
		return badFlag("rate-limit", errors.New("must be 0 (off) or more"))
	}
	if c.MaxConnsPerIP < 0 {
		return badFlag("max-conns-per-ip", errors.New("must be 0 (no limit) or more"))
	}
	if c.BootstrapExpect < 0 {
		return badFlag("bootstrap-expect", errors.New("must be 0 or more"))
	}
	return c.checkCompat()
}

// checkHostPort accepts host:port with a port from 1 to 65535, or 0 (the
// system picks one) where bind allows it.
func checkHostPort(addr string, bind bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: want host:port", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 || (n == 0 && !bind) {
		return fmt.Errorf("%q: port %q is not a port number (1-65535)", addr, port)
	}
	if !bind && host == "" {
		return fmt.Errorf("%q: want host:port", addr)
	}
	return nil
}

// newFlagSet returns an empty flag set for command name that prints
// nothing itself: run reports its errors in one line, and help prints
// the usage (help.go). Like every flag set here it takes --version,
// which has no environment twin.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.Bool(versionFlag, false, "print the version and exit")
	return fs
}

// versionFlag is the flag that prints the version.
const versionFlag = "version"

// errVersion is what parsing returns for --version: run prints the
// version and exits 0, as for --help (flag.ErrHelp).
var errVersion = errors.New("version requested")

// parseWithEnv parses args; each flag not given there takes its PASTE_*
// environment twin, if set.
func parseWithEnv(fs *flag.FlagSet, args []string, env func(string) (string, bool)) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return helpError{fs.Name()}
		}
		return usageError{helpHint{flagError(err), fs.Name()}}
	}
	if v := fs.Lookup(versionFlag); v != nil && v.Value.String() == "true" {
		return errVersion
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil || f.Name == versionFlag {
			return
		}
		name := envName(f.Name)
		if v, ok := env(name); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = usageError{fmt.Errorf("%s=%q: %w", name, v, e)}
			}
		}
	})
	return err
}

// envName is the environment twin of flag name: PASTE_DATA_DIR for
// data-dir.
func envName(name string) string {
	return "PASTE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// parseSize reads a byte size: 1048576, 512KiB, 1MiB, 1MB, 2GiB.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
		{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
	}
	mult := int64(1)
	num := strings.TrimSpace(s)
	for _, u := range units {
		if strings.HasSuffix(strings.ToUpper(num), strings.ToUpper(u.suffix)) {
			num, mult = strings.TrimSpace(num[:len(num)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q: want a positive number of bytes like 1MiB", s)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}
