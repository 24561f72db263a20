package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm"
)

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "icn test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(k)
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	c, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(c)
	return cert, key, pool
}

// TestServeTLS: with --tls-cert/--tls-key the service speaks HTTPS at the
// https:// URL it prints, and the printed web-page URL carries the token.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key, pool := selfSigned(t, dir)
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, serveOptions{db: filepath.Join(dir, "fm.db"), addr: "127.0.0.1:0", topo: "torus:4x4",
			rules: "angara*", tlsCert: cert, tlsKey: key, mcastTimeout: time.Second}, pw)
		pw.Close()
	}()
	rd := bufio.NewReader(pr)
	first, _ := rd.ReadString('\n')
	go io.Copy(io.Discard, rd)
	f := strings.Fields(first)
	if len(f) < 5 || !strings.HasPrefix(f[4], "https://127.0.0.1:") {
		t.Fatalf("first line %q", first)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	resp, err := hc.Get(f[4] + "healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz over TLS: %d", resp.StatusCode)
	}
	// icn's clients trust the self-signed certificate given by --cacert,
	// and refuse the server without it.
	cl := clientFlags{server: f[4], tokenFile: fm.TokenFile(filepath.Join(dir, "fm.db")), cacert: cert}
	var fab map[string]any
	if err := cl.do(ctx, http.MethodGet, "/api/fabric", nil, &fab); err != nil || fab["spec"] != "torus:4x4" {
		t.Errorf("client with --cacert: %v %v", err, fab)
	}
	cl.cacert = ""
	if err := cl.do(ctx, http.MethodGet, "/api/fabric", nil, &fab); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("client without --cacert: %v", err)
	}
	cl.cacert = key // a PEM file without a certificate
	if err := cl.do(ctx, http.MethodGet, "/api/fabric", nil, &fab); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("client with a key as --cacert: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
