package node

import (
	"context"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The Raft port carries two protocols, told apart by the first byte of each
// connection (as in rqlite and Consul): Raft's own RPCs, and pastenode's
// internal HTTP calls between nodes (forwarded writes, read index). With a
// cluster key the whole port speaks mutual TLS first.
const (
	muxRaft byte = 'R'
	muxRPC  byte = 'H'
)

// muxListener accepts connections on the Raft port and hands each to the
// protocol its first byte names.
type muxListener struct {
	ln      net.Listener
	tls     *tls.Config // nil without a cluster key
	addr    net.Addr    // the advertised address
	idle    time.Duration
	raft    *chanListener
	rpc     *chanListener
	closeMu sync.Once
	done    chan struct{}
}

func newMux(ln net.Listener, advertise net.Addr, tlsConf *tls.Config, idle time.Duration) *muxListener {
	m := &muxListener{ln: ln, tls: tlsConf, addr: advertise, idle: idle, done: make(chan struct{})}
	m.raft = &chanListener{m: m, conns: make(chan net.Conn)}
	m.rpc = &chanListener{m: m, conns: make(chan net.Conn)}
	return m
}

// serve accepts until the listener closes.
func (m *muxListener) serve() {
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		go m.route(c)
	}
}

// route reads the protocol byte off its own goroutine, so that a slow or
// silent client cannot hold up other connections. The TLS handshake and
// the protocol byte must come within 10 seconds (or the idle timeout, if
// shorter). A Raft connection is then
// closed once it stays silent for the idle timeout (Raft's own transport
// sets no deadline on the serving side; its peers redial); the internal
// HTTP server applies its own timeouts.
func (m *muxListener) route(c net.Conn) {
	if m.tls != nil {
		c = tls.Server(c, m.tls)
	}
	_ = c.SetReadDeadline(time.Now().Add(min(10*time.Second, m.idle)))
	var b [1]byte
	if _, err := c.Read(b[:]); err != nil {
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	var to *chanListener
	switch b[0] {
	case muxRaft:
		to = m.raft
		c = &idleConn{Conn: c, idle: m.idle}
	case muxRPC:
		to = m.rpc
	default:
		c.Close()
		return
	}
	select {
	case to.conns <- c:
	case <-m.done:
		c.Close()
	}
}

func (m *muxListener) close() error {
	var err error
	m.closeMu.Do(func() {
		close(m.done)
		err = m.ln.Close()
	})
	return err
}

// dial opens a connection to a peer's Raft port for protocol proto.
func (m *muxListener) dial(ctx context.Context, addr string, proto byte) (net.Conn, error) {
	d := net.Dialer{}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if m.tls != nil {
		tc := tls.Client(c, m.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
		}
		c = tc
	}
	if _, err := c.Write([]byte{proto}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// idleConn fails a Read that waits longer than idle for data.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(b []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

// chanListener is the net.Listener for one protocol of the mux.
type chanListener struct {
	m     *muxListener
	conns chan net.Conn
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.m.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error   { return l.m.close() }
func (l *chanListener) Addr() net.Addr { return l.m.addr }

// streamLayer is the raft.StreamLayer over the mux.
type streamLayer struct{ *chanListener }

func (s streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return s.m.dial(ctx, string(addr), muxRaft)
}

// clusterTLS derives from the cluster key one Ed25519 key pair and a
// self-signed certificate that every node shares. Nodes run mutual TLS and
// accept exactly that public key, so only holders of the key can talk to
// the Raft port.
func clusterTLS(key []byte) (*tls.Config, error) {
	seed, err := hkdf.Key(sha256.New, key, nil, "pastenode cluster tls v1", ed25519.SeedSize)
	if err != nil {
		return nil, fmt.Errorf("derive tls key: %w", err)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "pastenode cluster"},
		DNSNames:              []string{"pastenode"},
		NotBefore:             time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, pub, priv)
	if err != nil {
		return nil, fmt.Errorf("make cluster certificate: %w", err)
	}
	verify := func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("peer sent no certificate")
		}
		got, ok := cs.PeerCertificates[0].PublicKey.(ed25519.PublicKey)
		if !ok || !got.Equal(pub) {
			return errors.New("peer does not hold the cluster key")
		}
		return nil
	}
	return &tls.Config{
		Certificates:       []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: priv}},
		ClientAuth:         tls.RequireAnyClientCert,
		InsecureSkipVerify: true, // replaced by VerifyConnection's key pinning
		VerifyConnection:   verify,
		MinVersion:         tls.VersionTLS13,
		ServerName:         "pastenode",
	}, nil
}
