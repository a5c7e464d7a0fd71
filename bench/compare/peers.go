package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// selfSigned writes a self-signed ECDSA P-256 certificate for 127.0.0.1
// and its key, which the live node and nginx both serve.
func selfSigned(dir string) (cert, key string, err error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		return "", "", err
	}
	kder, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		return "", "", err
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", "", err
	}
	return cert, key, os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
}

// startNginx serves root with 2 workers on httpAddr, with the same
// certificate as the live node on httpsAddr, and with sendfile on
// sendfileAddr. The first two keep nginx's default, no sendfile, as the
// 1 KiB rows were measured; large files are what sendfile is for.
func (b *bench) startNginx(ctx context.Context, root, httpAddr, httpsAddr, sendfileAddr, cert, key string) error {
	dir := filepath.Join(b.tmp, "nginx")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	conf := fmt.Sprintf(`worker_processes 2;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
daemon off;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %[1]s;
  proxy_temp_path %[1]s;
  fastcgi_temp_path %[1]s;
  uwsgi_temp_path %[1]s;
  scgi_temp_path %[1]s;
  keepalive_requests 1000000;
  default_type text/plain;
  server { listen %[2]s; root %[3]s; }
  server { listen %[4]s ssl; root %[3]s; ssl_certificate %[5]s; ssl_certificate_key %[6]s; }
  server { listen %[7]s; root %[3]s; sendfile on; }
}
`, dir, httpAddr, root, httpsAddr, cert, key, sendfileAddr)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return err
	}
	cmd, err := b.procs.start("nginx", "nginx", "-c", path, "-e", filepath.Join(dir, "error.log"))
	if err != nil {
		return err
	}
	return waitFor(ctx, 10*time.Second, "nginx", func() error {
		if err := b.procs.exitedEarly(cmd); err != nil {
			return err
		}
		return httpOK(b.hc, "http://"+httpAddr+"/raw/"+b.id)()
	})
}

// startEtcd starts a 3-member etcd cluster on loopback and returns the
// client URL of a follower and the members' process ids.
func (b *bench) startEtcd(ctx context.Context) (string, []int, error) {
	addrs, err := freePorts(6)
	if err != nil {
		return "", nil, err
	}
	var initial []string
	for i := range 3 {
		initial = append(initial, fmt.Sprintf("e%d=http://%s", i, addrs[3+i]))
	}
	var clients []string
	var pids []int
	for i := range 3 {
		client, peer := "http://"+addrs[i], "http://"+addrs[3+i]
		clients = append(clients, client)
		cmd, err := b.procs.start(fmt.Sprintf("etcd%d", i), "etcd",
			"--name", fmt.Sprintf("e%d", i), "--data-dir", filepath.Join(b.tmp, fmt.Sprintf("etcd%d", i)),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "pastenode-bench", "--logger", "zap", "--log-level", "error")
		if err != nil {
			return "", nil, err
		}
		pids = append(pids, cmd.Process.Pid)
	}
	var follower string
	err = waitFor(ctx, 30*time.Second, "etcd follower", func() error {
		for _, c := range clients {
			if leader, err := b.etcdIsLeader(c); err != nil {
				return err
			} else if !leader {
				follower = c
			}
		}
		return nil
	})
	return follower, pids, err
}

// etcdIsLeader asks the etcd member at url whether it leads; it fails
// while there is no leader.
func (b *bench) etcdIsLeader(url string) (bool, error) {
	resp, err := b.hc.Post(url+"/v3/maintenance/status", "application/json", strings.NewReader("{}"))
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var st struct {
		Header struct {
			MemberID string `json:"member_id"`
		} `json:"header"`
		Leader string `json:"leader"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return false, err
	}
	if resp.StatusCode != http.StatusOK || st.Leader == "" || st.Leader == "0" {
		return false, fmt.Errorf("%s: no leader yet (%s)", url, resp.Status)
	}
	return st.Leader == st.Header.MemberID, nil
}
