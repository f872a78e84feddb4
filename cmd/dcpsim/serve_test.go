package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// serveTree makes a folder to serve: a run folder with its page, a sweep
// folder without one, a hidden folder, and two symbolic links that lead
// outside it (a folder's and a file's), next to a secret outside.
func serveTree(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	dir := filepath.Join(base, "served")
	for name, text := range map[string]string{
		"outside/secret.txt":           "the secret",
		"served/run-a/summary.json":    "{}",
		"served/run-a/index.html":      "<!DOCTYPE html><title>run-a's page</title>",
		"served/run-a/throughput.svg":  "<svg xmlns='http://www.w3.org/2000/svg'/>",
		"served/sweeps/b/sweep.json":   "{}",
		"served/.cache/c/summary.json": "{}",
		"served/notes.txt":             "notes",
	} {
		p := filepath.Join(base, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "leak")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "leak.txt")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// get answers one request of h: the status and the body.
func get(t *testing.T, h http.Handler, method, target string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// TestServeHandler: / is the index of the results folders (not a hidden
// one), a folder's page and files are served, and nothing outside the
// folder is: no .. path, no symbolic link that leads out; only GET and
// HEAD.
func TestServeHandler(t *testing.T) {
	dir := serveTree(t)
	h, err := newServeHandler(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	code, body := get(t, h, "GET", "/")
	if code != http.StatusOK || !strings.Contains(body, `href="run-a/index.html"`) || !strings.Contains(body, `href="sweeps/b/"`) ||
		!strings.Contains(body, "<title>served · dcpsim index</title>") {
		t.Errorf("GET /: %d\n%s", code, body)
	}
	if strings.Contains(body, ".cache") || strings.Contains(body, "leak") {
		t.Errorf("the index lists a hidden folder or follows a link:\n%s", body)
	}
	if code, body := get(t, h, "GET", "/run-a/"); code != http.StatusOK || !strings.Contains(body, "run-a's page") {
		t.Errorf("GET /run-a/: %d %q", code, body)
	}
	if code, body := get(t, h, "GET", "/run-a/throughput.svg"); code != http.StatusOK || !strings.Contains(body, "<svg") {
		t.Errorf("GET a figure: %d %q", code, body)
	}
	if code, body := get(t, h, "HEAD", "/"); code != http.StatusOK || body != "" {
		t.Errorf("HEAD /: %d %q", code, body)
	}
	for _, target := range []string{"/../outside/secret.txt", "/run-a/../../outside/secret.txt", "/leak/secret.txt", "/leak.txt", "/leak/"} {
		code, body := get(t, h, "GET", target)
		if code == http.StatusOK || strings.Contains(body, "the secret") || strings.Contains(body, "secret.txt") {
			t.Errorf("GET %s: %d %q: a file outside the folder", target, code, body)
		}
		if code >= 500 {
			t.Errorf("GET %s: %d, want a refusal (4xx)", target, code)
		}
	}
	for _, m := range []string{"POST", "PUT", "DELETE"} {
		if code, _ := get(t, h, m, "/notes.txt"); code != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, code)
		}
	}

	// A results folder served itself: / is its page.
	run, err := newServeHandler(filepath.Join(dir, "run-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if code, body := get(t, run, "GET", "/"); code != http.StatusOK || !strings.Contains(body, "run-a's page") {
		t.Errorf("serving a run folder, GET /: %d %q", code, body)
	}
	if _, err := newServeHandler(filepath.Join(dir, "missing")); err == nil || !isBadInput(err) {
		t.Errorf("a missing folder: %v, want bad input", err)
	}
}

// TestServeCommand: dcpsim serve listens on 127.0.0.1 unless --addr says
// otherwise, answers, and stops cleanly (exit 0) on Ctrl-C (a real SIGINT
// to this process); bad flags are bad input.
func TestServeCommand(t *testing.T) {
	dir := serveTree(t)
	r, w := io.Pipe()
	done := make(chan int, 1)
	var errOut strings.Builder
	go func() {
		code := run([]string{"serve", dir, "--port", "0"}, w, &errOut)
		w.Close()
		done <- code
	}()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("no line from dcpsim serve: %v (stderr %q)", err, errOut.String())
	}
	go io.Copy(io.Discard, r)
	rest, ok := strings.CutPrefix(line, "serving "+dir+" read-only at http://")
	hostPort, _, _ := strings.Cut(rest, "/")
	host, _, err := net.SplitHostPort(hostPort)
	if !ok || err != nil || host != "127.0.0.1" {
		t.Fatalf("dcpsim serve printed %q: want it on 127.0.0.1", line)
	}
	resp, err := http.Get("http://" + hostPort + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "run-a/index.html") {
		t.Errorf("GET /: %d\n%s", resp.StatusCode, body)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != exitOK {
		t.Errorf("after Ctrl-C: exit %d, stderr %q", code, errOut.String())
	}
	if _, err := http.Get("http://" + hostPort + "/"); err == nil {
		t.Error("still answering after Ctrl-C")
	}

	for _, args := range [][]string{{"--port", "70000"}, {"--addr", "example.com"}, {dir, dir}, {filepath.Join(dir, "missing")}} {
		if code, _, _ := dcpsim(t, append([]string{"serve"}, args...)...); code != exitInput {
			t.Errorf("serve %q: exit %d, want 2", args, code)
		}
	}
}
