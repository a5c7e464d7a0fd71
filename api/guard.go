package api

import (
	"crypto/subtle"
	"math"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultNoQuorumWait is Config.NoQuorumWait when none is given: about one
// election (Raft's default election timeout is a second, and a second
// round is common).
const DefaultNoQuorumWait = 2 * time.Second

// admin wraps a handler that needs the admin token. A node without one
// refuses every admin call: no address, loopback included, is trusted, as
// a reverse proxy on the same host would make every client local. A POST
// must say Content-Type: application/json, which a cross-site form cannot.
// Admin requests do not spend the rate limit (allowWrite).
func (s *Server) admin(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.adminAllowed(w, r) {
			h(w, r)
		}
	})
}

// adminAllowed checks the admin token and an admin POST's media type, or
// answers the request and returns false.
func (s *Server) adminAllowed(w http.ResponseWriter, r *http.Request) bool {
	switch {
	case s.cfg.AdminToken == "" && s.cfg.IsClusterToken == nil:
		s.error(w, r, errorf(http.StatusForbidden, "admin calls are off: this node has no admin token"))
		return false
	case !s.isAdmin(r):
		s.error(w, r, errorf(http.StatusUnauthorized, "admin token required: Authorization: Bearer TOKEN"))
		return false
	}
	if r.Method == http.MethodPost {
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			s.error(w, r, errorf(http.StatusUnsupportedMediaType, "admin calls take Content-Type: application/json"))
			return false
		}
	}
	return true
}

// isAdmin reports whether r carries an admin token: the node's own or
// the cluster's.
func (s *Server) isAdmin(r *http.Request) bool {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return false
	}
	if s.cfg.AdminToken != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.AdminToken)) == 1 {
		return true
	}
	return s.cfg.IsClusterToken != nil && s.cfg.IsClusterToken(token)
}

// allowWrite takes one token of the client's write budget, or answers 429
// with the time until the next token and returns false. Admin requests
// are exempt: an operator cleaning up spam from behind the spammer's NAT
// must not be locked out with it.
func (s *Server) allowWrite(w http.ResponseWriter, r *http.Request) bool {
	if s.isAdmin(r) {
		return true
	}
	wait := s.limiter.reserve(s.clientIP(r))
	if wait == 0 {
		return true
	}
	s.error(w, r, &httpError{code: http.StatusTooManyRequests, retryAfter: wait,
		msg: "too many writes from your address, retry in " + strconv.Itoa(retrySeconds(wait)) + "s"})
	return false
}

// retrySeconds is d as whole seconds for Retry-After, rounded up.
func retrySeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// peerAddr is the address of the TCP peer.
func peerAddr(r *http.Request) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

// Trusted reports whether a is one of --trusted-proxies (the connection
// cap exempts them too).
func (s *Server) Trusted(a netip.Addr) bool {
	return slices.ContainsFunc(s.cfg.TrustedProxies, func(p netip.Prefix) bool { return p.Contains(a) })
}

// clientIP is the address the rate limit counts by: the TCP peer, or behind
// a trusted proxy the rightmost X-Forwarded-For hop that is not itself a
// trusted proxy (hops further left were written by the client).
func (s *Server) clientIP(r *http.Request) string {
	peer, ok := peerAddr(r)
	if !ok {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			return r.RemoteAddr
		}
		return host
	}
	if !s.Trusted(peer) {
		return peer.String()
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // written by the client: the last good hop is the key
		}
		client = a.Unmap()
		if !s.Trusted(client) {
			break
		}
	}
	return client.String()
}

// forwarded returns the last value of a proxy header, as the nearest proxy
// set it, when r came from a trusted proxy: from anyone else it is not
// believed.
func (s *Server) forwarded(r *http.Request, name string) string {
	if peer, ok := peerAddr(r); !ok || !s.Trusted(peer) {
		return ""
	}
	vs := r.Header.Values(name)
	if len(vs) == 0 {
		return ""
	}
	parts := strings.Split(vs[len(vs)-1], ",")
	return strings.TrimSpace(parts[len(parts)-1])
}

// validHost reports whether h may stand in a URL as its host[:port].
func validHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for _, c := range h {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.ContainsRune(".-:[]_", c):
		default:
			return false
		}
	}
	return true
}

// baseURL is --public-url, or the scheme and host the client used: the
// request's own, or a trusted proxy's X-Forwarded-Proto and -Host.
func (s *Server) baseURL(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if p := strings.ToLower(s.forwarded(r, "X-Forwarded-Proto")); p == "http" || p == "https" {
		scheme = p
	}
	if h := s.forwarded(r, "X-Forwarded-Host"); validHost(h) {
		host = h
	}
	return scheme + "://" + host + s.cfg.BasePath
}

// limiter gives each client perMinute writes a minute, with a burst of the
// same size. A client is an IPv4 address or an IPv6 /64 (see ClientKey),
// and at most maxClients are kept.
type limiter struct {
	perMinute int
	mu        sync.Mutex
	clients   map[string]*rate.Limiter
	swept     time.Time // the last sweep for idle clients
}

// maxClients bounds the limiter's memory.
const maxClients = 10000

func newLimiter(perMinute int) *limiter {
	return &limiter{perMinute: perMinute, clients: make(map[string]*rate.Limiter)}
}

// reserve takes a token for ip and returns 0, or takes none and returns how
// long until one is free.
func (l *limiter) reserve(ip string) time.Duration {
	if l.perMinute <= 0 {
		return 0
	}
	key := ClientKey(ip)
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.clients[key]
	if !ok {
		if len(l.clients) >= maxClients {
			l.makeRoom()
		}
		lim = rate.NewLimiter(rate.Limit(float64(l.perMinute)/60), l.perMinute)
		l.clients[key] = lim
	}
	res := lim.Reserve()
	if d := res.Delay(); d > 0 {
		res.Cancel()
		return d
	}
	return 0
}

// makeRoom frees at least one place: idle clients go (a full limiter is
// the same as a new one), swept at most once a second so that a stream of
// new addresses costs no full scan each; failing that, any one client.
func (l *limiter) makeRoom() {
	if now := time.Now(); now.Sub(l.swept) >= time.Second {
		l.swept = now
		for k, v := range l.clients {
			if v.Tokens() >= float64(l.perMinute) {
				delete(l.clients, k)
			}
		}
	}
	for k := range l.clients {
		if len(l.clients) < maxClients {
			return
		}
		delete(l.clients, k)
	}
}

// ClientKey is what the per-client limits count by: an IPv4 address as it
// is, an IPv6 address by its /64, the least a site is given, so that one
// host cannot take a fresh budget from every address of its prefix.
func ClientKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	if a = a.Unmap(); a.Is6() {
		return netip.PrefixFrom(a, 64).Masked().String()
	}
	return a.String()
}

// secureHeaders sets X-Content-Type-Options: nosniff on every response.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["X-Content-Type-Options"] = hvNosniff
		next.ServeHTTP(w, r)
	})
}

var hvNosniff = []string{"nosniff"}
