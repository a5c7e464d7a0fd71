// Package api serves pastenode's HTTP contract on a live node: creates,
// reads, burns and deletes, the web UI's pages, health, metrics and status,
// and the admin calls (join, remove, import, export, snapshot, backup,
// profiles). The typed client of the same contract is the client package.
//
// The handlers call small interfaces declared here, Store (the replicated
// paste store, *node.Node) and Cluster (gossip membership,
// *cluster.Cluster), so they can be tested against fakes and know nothing
// of Raft. The JSON they send is the root package's wire types.
package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/internal/httpx"
	"github.com/pastenode/pastenode/mirror"
	"github.com/pastenode/pastenode/node"
	"github.com/pastenode/pastenode/ui"
)

// Store is the replicated paste store, as the handlers need it
// (*node.Node).
type Store interface {
	// Create replicates a new paste under a fresh id and returns it.
	Create(ctx context.Context, req node.CreateRequest) (*fsm.Paste, error)
	// Import replicates a paste under the id and times it names, or
	// returns fsm.ErrExists when the id is taken.
	Import(ctx context.Context, req node.ImportRequest) (*fsm.Paste, error)
	// Delete removes a paste with its delete token, or as admin.
	Delete(ctx context.Context, id, token string, admin bool) error
	// Read reads a live paste, consistent with every acknowledged write, or
	// from the local copy when stale is set. It returns fsm.ErrNotFound or,
	// when it cannot confirm the answer, node.ErrUnavailable.
	Read(ctx context.Context, id string, stale bool) (*fsm.Paste, error)
	// ReadRaw is Read for a server that sends the paste and is done with
	// it: a small paste is read into into, its fields pointing into buf,
	// grown as need be and returned for reuse; a large one comes as a file
	// region c, into's Content nil, which the caller closes and sends with
	// sendfile.
	ReadRaw(ctx context.Context, id string, stale bool, into *fsm.Paste, buf []byte) (rec []byte, c *fsm.Content, err error)
	// Consume hands out a burn paste exactly once.
	Consume(ctx context.Context, id string) (*fsm.Paste, error)
	// View is a consistent view of the whole store, for exports.
	View() fsm.View
	Stats() (count, bytes int64)
	Info() node.Info
	Ready() error
	Snapshot() (uint64, error)
}

// Cluster is gossip membership, as the admin calls need it.
type Cluster interface {
	Members() []pastenode.Member
	Join(ctx context.Context, addrs []string) error
	Remove(ctx context.Context, id string) error
}

// Config configures a Server.
type Config struct {
	Store   Store
	Cluster Cluster // nil: a node without gossip; join and remove answer 501
	UI      *ui.UI
	Logger  *slog.Logger
	Version string

	PublicURL    string        // base of returned URLs; "" derives it from the request
	MaxPasteSize int64         // bytes
	MaxExpire    time.Duration // 0: no limit
	// AdminToken is the node's own admin token (--admin-token); "": none.
	AdminToken string
	// IsClusterToken reports whether a token is the cluster's admin token
	// (node.IsAdminToken); nil: none. With neither, every admin call is
	// refused.
	IsClusterToken func(token string) bool
	// RateLimit is the writes (creates, deletes, reveals and consuming
	// reads, admin writes) per minute per client IP; 0: off.
	RateLimit int
	// MaxStoreBytes is the content the store may hold before creates are
	// refused with 507; 0: no limit.
	MaxStoreBytes int64
	// TrustedProxies are the peers whose X-Forwarded-For, -Proto and
	// -Host are believed, for the rate limit's client address and the
	// URLs creates return. From anyone else they are ignored.
	TrustedProxies []netip.Prefix
	// NoQuorumWait is the Retry-After of a write refused for want of a
	// leader: an estimate of one election. 0 means DefaultNoQuorumWait.
	NoQuorumWait time.Duration
	// CreateTokensFile, when set, names a file of tokens that creates
	// need (see --create-tokens); it is read again when it changes.
	CreateTokensFile string

	// DefaultExpire is the expiry of a create that gives none; 0 means
	// MaxExpire (never when there is no limit).
	DefaultExpire time.Duration
	// BasePath is the path prefix every route lives under, as "/paste";
	// "" serves at the root.
	BasePath string
	// ExportStarted, when set, is called as an export starts building,
	// and the function it returns once the build has ended: a node lets
	// the garbage collector's headroom grow meanwhile, as an export
	// allocates its buffers at a rate no other call does.
	ExportStarted func() (done func())
	// ExportCache, when set, keeps the pages of one export for the next,
	// which then renders and compresses only the pastes new since.
	ExportCache *mirror.PageCache
}

// Validate checks c and fills in defaults.
func (c *Config) Validate() error {
	if c.Store == nil {
		return errors.New("api: no store")
	}
	if c.UI == nil {
		return errors.New("api: no ui")
	}
	if c.MaxPasteSize <= 0 {
		return fmt.Errorf("api: max paste size %d must be positive", c.MaxPasteSize)
	}
	if c.MaxExpire < 0 {
		return fmt.Errorf("api: max expire %s must not be negative", c.MaxExpire)
	}
	if c.MaxStoreBytes < 0 {
		return fmt.Errorf("api: max store bytes %d must not be negative", c.MaxStoreBytes)
	}
	if c.RateLimit < 0 {
		return fmt.Errorf("api: rate limit %d must not be negative", c.RateLimit)
	}
	if c.NoQuorumWait <= 0 {
		c.NoQuorumWait = DefaultNoQuorumWait
	}
	if err := c.checkCompat(); err != nil {
		return err
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Server is the HTTP API of one node.
type Server struct {
	cfg     Config
	log     *slog.Logger
	router  *mux.Router
	metrics *metrics
	limiter *limiter
	tokens  *createTokens // nil: anyone may create
	started time.Time

	// rawMetrics are the raw route's instruments, for ServeFast.
	rawMetrics *routeMetrics
}

// NewServer returns the API for cfg.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "api"),
		router:  mux.NewRouter(),
		limiter: newLimiter(cfg.RateLimit),
		started: time.Now(),
	}
	s.metrics = newMetrics(cfg.Store)
	if cfg.CreateTokensFile != "" {
		var err error
		if s.tokens, err = loadCreateTokens(cfg.CreateTokensFile); err != nil {
			return nil, err
		}
	}
	s.routes()
	s.instrumentRoutes(s.router)
	return s, nil
}

// Handler returns the root handler: the routes, under Config.BasePath.
func (s *Server) Handler() http.Handler { return s.underBasePath(s.hotFirst()) }

// Registry returns the Prometheus registry the server reports to, so that
// other components can add their collectors.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

func (s *Server) routes() {
	r := s.router
	// Paths are matched as sent: mux would answer /raw/..%2fx with a 301
	// to a cleaned path; here it is a 404 like any unknown path.
	r.SkipClean(true)
	// Every route's handler is wrapped in secureHeaders and the metrics
	// once these are set up: see instrumentRoutes.
	get := []string{http.MethodGet, http.MethodHead}

	// The raw read first: mux tries routes in order, and this one, the
	// most frequent, overlaps none of the routes it comes before. A GET or
	// HEAD of it does not even reach the router: see hotFirst.
	r.HandleFunc(httpx.RawPrefix+"{id}", s.handleRaw).Methods(get...).Name("raw")
	r.HandleFunc("/healthz", s.handleHealthz).Methods(get...).Name("healthz")
	r.HandleFunc("/readyz", s.handleReadyz).Methods(get...).Name("readyz")
	r.Handle("/metrics", s.metrics.handler()).Methods(get...).Name("metrics")
	r.PathPrefix("/static/").Handler(http.StripPrefix("/static/", s.cfg.UI.Static())).Methods(get...).Name("static")

	// Full paths on the root router, not a subrouter: a gorilla subrouter
	// turns a wrong method into a 404 instead of a 405.
	r.HandleFunc("/api/v1/pastes", s.handleCreateJSON).Methods(http.MethodPost).Name("api_create")
	r.HandleFunc("/api/v1/pastes/{id}", s.handleMeta).Methods(get...).Name("api_meta")
	r.Handle("/api/v1/pastes/{id}", s.admin(s.handleImport)).Methods(http.MethodPut).Name("import")
	r.HandleFunc("/api/v1/lang", s.handleLang).Methods(get...).Name("api_lang")
	r.HandleFunc("/api/v1/status", s.handleStatus).Methods(get...).Name("status")
	r.Handle("/api/v1/cluster/join", s.admin(s.handleJoin)).Methods(http.MethodPost).Name("join")
	r.Handle("/api/v1/cluster/nodes/{id}", s.admin(s.handleRemove)).Methods(http.MethodDelete).Name("remove")
	r.Handle("/api/v1/export.cdb", s.admin(s.handleExport)).Methods(get...).Name("export")
	r.Handle("/api/v1/snapshot", s.admin(s.handleSnapshot)).Methods(http.MethodPost).Name("snapshot")
	r.Handle("/api/v1/admin-token", s.admin(s.handleRotateToken)).Methods(http.MethodPost).Name("admin_token")
	r.Handle("/api/v1/backup", s.admin(s.handleBackup)).Methods(http.MethodGet).Name("backup")
	s.pprofRoutes(r)

	r.HandleFunc("/", s.handleIndex).Methods(get...).Name("index")
	r.HandleFunc("/", s.handleCreate).Methods(http.MethodPost).Name("create") // hotFirst too
	s.compatRoutes(r)
	r.HandleFunc("/{id}/reveal", s.handleReveal).Methods(http.MethodPost).Name("reveal")
	r.HandleFunc("/{id}", s.handleView).Methods(get...).Name("view")
	r.HandleFunc("/{id}", s.handleDelete).Methods(http.MethodDelete).Name("delete")

	// Requests that match no route are counted too, under "unknown".
	unmatched := s.metrics.route("unknown")
	r.NotFoundHandler = secureHeaders(instrument(unmatched, http.HandlerFunc(s.notFound)))
	r.MethodNotAllowedHandler = secureHeaders(instrument(unmatched, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.error(w, r, errorf(http.StatusMethodNotAllowed, "method %s not allowed here", r.Method))
	})))
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.error(w, r, errorf(http.StatusNotFound, "not found"))
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Store.Ready(); err != nil {
		s.error(w, r, errorf(http.StatusServiceUnavailable, "not ready: %v", err))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ready\n")
}
