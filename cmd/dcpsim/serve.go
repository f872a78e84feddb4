package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dcpsim/dcpsim/internal/report"
	"github.com/dcpsim/dcpsim/internal/report/pages"
)

const serveUsage = `  dcpsim serve [DIR] [--port N] [--addr HOST]

  Serve the results folders under DIR (default the current folder) read-only
  over HTTP on 127.0.0.1:N (default port 8043; 0 picks a free one), and print
  the address to open. / is an index of every results folder under DIR (run,
  sweep, search, compare and validate --out folders, found as dcpsim report
  --index finds them), each linked to its index.html; when DIR is itself a
  results folder, / is its page. The pages work as they do from file://, and
  their "open in the Perfetto UI" buttons can send a trace, which a page
  opened from file:// cannot read.

  Only GET and HEAD, only files under DIR: a path with .., or a symbolic link
  that leads outside DIR, is refused (the files are opened through an os.Root
  of DIR). It listens on 127.0.0.1 alone, reachable from this machine only;
  --addr names another address to listen on (e.g. 0.0.0.0 for every
  interface: anyone who can reach the port then reads DIR). Ctrl-C (or
  SIGTERM, SIGHUP) stops it cleanly: the requests in flight finish (up to 5
  s) and it exits 0.`

// defaultServePort is dcpsim serve's port unless --port says.
const defaultServePort = 8043

func serveCommand() command {
	return command{name: "serve", summary: "serve results folders read-only on 127.0.0.1, with an index of every folder",
		usage: serveUsage, run: runServe}
}

// runServe parses the flags, opens DIR and serves it until a signal.
func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", serveUsage, stderr)
	port := fs.Int("port", defaultServePort, "TCP `port` to listen on (0: a free one)")
	addr := fs.String("addr", "127.0.0.1", "`address` to listen on; anything but 127.0.0.1 (or ::1) exposes DIR beyond this machine")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return badInput("unexpected arguments %q: one folder at most", pos[1:])
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	if *port < 0 || *port > 65535 {
		return badInput("--port %d: must be in [0, 65535]", *port)
	}
	if net.ParseIP(*addr) == nil && *addr != "localhost" {
		return badInput("--addr %q: not an IP address (127.0.0.1, ::1, 0.0.0.0 or an interface's address)", *addr)
	}
	h, err := newServeHandler(dir)
	if err != nil {
		return err
	}
	defer h.Close()
	ln, err := net.Listen("tcp", net.JoinHostPort(*addr, strconv.Itoa(*port)))
	if err != nil {
		return fmt.Errorf("listening on %s port %d: %w", *addr, *port, err)
	}
	ctx, stop := interruptContext()
	defer stop()
	fmt.Fprintf(stdout, "serving %s read-only at http://%s/ (Ctrl-C stops)\n", dir, ln.Addr())
	return serve(ctx, ln, h)
}

// serveShutdownSeconds bound how long a stopped server waits for the
// requests in flight.
const serveShutdownSeconds = 5

// serve answers h's requests on ln until ctx is done, then shuts the
// server down: no new connection, the requests in flight finished (or cut
// after serveShutdownSeconds). A clean stop returns nil.
func serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), serveShutdownSeconds*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// serveHandler serves the files under a folder read-only, through an
// os.Root of it, and an index of its results folders at /.
type serveHandler struct {
	// title is the index's title: the folder's name.
	title string
	root  *os.Root
	fsys  fs.FS
	files http.Handler
}

// newServeHandler opens dir for serving.
func newServeHandler(dir string) (*serveHandler, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, badInput("serve %s: %v (a folder of results to serve)", dir, err)
	}
	title := dir
	if abs, err := filepath.Abs(dir); err == nil {
		title = filepath.Base(abs)
	}
	fsys := rootFS{root.FS()}
	return &serveHandler{title: title, root: root, fsys: fsys, files: http.FileServerFS(fsys)}, nil
}

// Close releases the folder.
func (h *serveHandler) Close() error { return h.root.Close() }

// ServeHTTP answers GET and HEAD: the index at / (unless the folder is
// itself a results folder with a page), else the file.
func (h *serveHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "read-only: GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	if r.URL.Path == "/" && !h.isResultsFolder() {
		d, err := report.IndexDoc(h.fsys, h.title)
		if err != nil {
			http.Error(w, "reading the folder: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.Method == http.MethodHead {
			return
		}
		if err := pages.Write(w, d); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
		return
	}
	h.files.ServeHTTP(w, r)
}

// isResultsFolder reports whether the served folder is itself a results
// folder with its page (dcpsim serve runs/testbed-256k).
func (h *serveHandler) isResultsFolder() bool {
	return pages.Kind(h.fsys, ".") != "" && pages.IsPage(h.fsys, ".")
}

// rootFS is an os.Root's file system whose errors other than a missing
// file read as permission denied (403), so that a path that escapes the
// root (a symbolic link leading outside it) is refused, not a 500.
type rootFS struct{ fs.FS }

// Open opens name under the root.
func (r rootFS) Open(name string) (fs.File, error) {
	f, err := r.FS.Open(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return f, err
}
