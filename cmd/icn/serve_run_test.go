package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunServeMessages runs the serve command in-process with a context
// that is already cancelled (it starts, prints, and shuts down): the
// first serving start prints the token and a usable URL, the next one
// does not print the token, and --topo on an existing database is said
// to be ignored.
func TestRunServeMessages(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "fm.db")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := serveOptions{db: db, addr: "127.0.0.1:0", topo: "torus:4x4", rules: "angara*"}
	var w bytes.Buffer
	if err := runServe(ctx, o, &w); err != nil {
		t.Fatal(err)
	}
	tok, _ := os.ReadFile(db + ".token")
	out := w.String()
	if !strings.Contains(out, strings.TrimSpace(string(tok))) || !strings.Contains(out, "http://127.0.0.1:") || strings.Contains(out, "[::]") {
		t.Fatalf("first start:\n%s", out)
	}
	w.Reset()
	o.topo = "torus:8x8"
	if err := runServe(ctx, o, &w); err != nil {
		t.Fatal(err)
	}
	out = w.String()
	if strings.Contains(out, strings.TrimSpace(string(tok))) {
		t.Errorf("token printed again:\n%s", out)
	}
	if !strings.Contains(out, "API token: in "+db+".token") {
		t.Errorf("a later start does not say where the token is:\n%s", out)
	}
	if !strings.Contains(out, "--topo torus:8x8 ignored") || !strings.Contains(out, "torus:4x4") {
		t.Errorf("no note about the ignored --topo:\n%s", out)
	}
	w.Reset()
	o.topo, o.rotateToken = "", true
	if err := runServe(ctx, o, &w); err != nil {
		t.Fatal(err)
	}
	tok2, _ := os.ReadFile(db + ".token")
	if string(tok2) == string(tok) || !strings.Contains(w.String(), strings.TrimSpace(string(tok2))) {
		t.Errorf("rotation: %s", w.String())
	}
	if !loopbackAddr("[::1]:80") || !loopbackAddr("localhost:1") || loopbackAddr("0.0.0.0:1") || loopbackAddr(":8080") {
		t.Error("loopbackAddr")
	}
	for _, a := range []*net.TCPAddr{{IP: net.IPv6unspecified, Port: 8091}, {IP: net.IPv4zero, Port: 8091}} {
		if u := serviceURL(a, true); strings.Contains(u, "[::]") || strings.Contains(u, "0.0.0.0") || !strings.HasPrefix(u, "https://") {
			t.Errorf("URL for %v: %s", a, u)
		}
	}
	if u := serviceURL(&net.TCPAddr{IP: net.ParseIP("::1"), Port: 80}, false); u != "http://[::1]:80/" {
		t.Errorf("IPv6 URL: %s", u)
	}
}
