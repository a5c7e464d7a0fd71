package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// wrkResult is what one wrk run measured.
type wrkResult struct {
	rps      float64
	p99      time.Duration // 0 unless run with --latency
	bad      int64         // answers with another status than the script wants; -1 without a script that counts
	errors   int64         // socket errors: connect, read, write, timeout
	requests int64
}

// load describes one wrk run.
type load struct {
	url      string
	conns    int
	duration time.Duration
	script   string // a Lua file, or ""
	latency  bool
}

// runWrk runs wrk with one thread, as the figures were taken.
func runWrk(ctx context.Context, l load) (wrkResult, error) {
	args := []string{"-t1", "-c" + strconv.Itoa(l.conns), "-d" + strconv.FormatFloat(l.duration.Seconds(), 'f', -1, 64) + "s", "--timeout", "10s"}
	if l.script != "" {
		args = append(args, "-s", l.script)
	}
	if l.latency {
		args = append(args, "--latency")
	}
	out, err := exec.CommandContext(ctx, "wrk", append(args, l.url)...).CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk %s: %w: %s", l.url, err, out)
	}
	r, err := parseWrk(string(out))
	if err != nil {
		return r, fmt.Errorf("wrk %s: %w in %q", l.url, err, out)
	}
	return r, nil
}

// parseWrk reads wrk's report: requests/s, the 99th percentile of
// --latency, the socket errors, and the "bad N" line of our Lua scripts.
func parseWrk(out string) (wrkResult, error) {
	r := wrkResult{bad: -1}
	found := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "Requests/sec:":
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return r, err
			}
			r.rps, found = v, true
		case len(f) == 2 && f[0] == "99%":
			d, err := parseWrkDuration(f[1])
			if err != nil {
				return r, err
			}
			r.p99 = d
		case len(f) == 2 && f[0] == "bad":
			r.bad, _ = strconv.ParseInt(f[1], 10, 64)
		case len(f) >= 5 && f[1] == "requests" && f[2] == "in":
			r.requests, _ = strconv.ParseInt(f[0], 10, 64)
		case len(f) > 3 && f[0] == "Socket" && f[1] == "errors:":
			// Socket errors: connect 0, read 12, write 0, timeout 3
			for i := 2; i+1 < len(f); i += 2 {
				n, _ := strconv.ParseInt(strings.TrimSuffix(f[i+1], ","), 10, 64)
				r.errors += n
			}
		}
	}
	if !found {
		return r, fmt.Errorf("no Requests/sec")
	}
	return r, nil
}

// parseWrkDuration reads wrk's "812.00us", "1.20ms", "2.01s" or "1.00m".
func parseWrkDuration(s string) (time.Duration, error) {
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, err
			}
			return time.Duration(math.Round(f * float64(u.unit))), nil
		}
	}
	return 0, fmt.Errorf("duration %q", s)
}

// countScript is a wrk Lua script that sends body with method and headers
// and counts the answers whose status is not want; with keyed, each
// request is an etcd v3 put of value under a new key instead.
func countScript(want int, method, contentType, body string) string {
	return fmt.Sprintf(`local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0 end
wrk.method = %q
wrk.headers["Content-Type"] = %q
wrk.body = %q
function response(status, headers, body)
  if status ~= %d then bad = bad + 1 end
end
function done(summary, latency, requests)
  local n = 0
  for _, t in ipairs(threads) do n = n + t:get("bad") end
  io.write(string.format("bad %%d\n", n))
end
`, method, contentType, body, want)
}

// etcdPutScript is countScript for etcd: each request puts value (base64)
// under a new 12-byte key through the v3 HTTP gateway and wants a 200.
func etcdPutScript(value64 string) string {
	return countScript(200, "POST", "application/json", "") + fmt.Sprintf(`
local chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function b64(s)
  local out = {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local n = a * 65536 + b * 256 + c
    for shift = 18, 0, -6 do
      local k = math.floor(n / 2 ^ shift) %% 64
      out[#out + 1] = chars:sub(k + 1, k + 1)
    end
  end
  return table.concat(out)
end
local seq = math.random(1, 90000) * 1000000 -- keeps the key at 12 bytes
function request()
  seq = seq + 1
  local key = b64(string.format("k%%011d", seq))
  return wrk.format(nil, "/v3/kv/put", nil, '{"key":"' .. key .. '","value":"%s"}')
end
`, value64)
}
