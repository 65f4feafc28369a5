// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// DefaultEndpoint is where the viewer listens unless told otherwise (design §8).
const DefaultEndpoint = "127.0.0.1:13180"

// contentSecurityPolicy allows the page its own scripts, styles and API only:
// no inline script, no other host.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Options configure a Handler.
type Options struct {
	// CaptureDir is the directory to show. It may not exist yet.
	CaptureDir string
	// JaegerURL, when set, makes a rollout page link to JaegerURL/trace/<trace id>.
	JaegerURL string
	// LocalOnly refuses requests whose Host header is a name other than
	// localhost, so that a web page that rebinds its DNS name to 127.0.0.1
	// cannot read the captures. Set it when the viewer listens on loopback.
	LocalOnly bool
	// Logger receives what the viewer could not read. Default: none.
	Logger *zap.Logger
	// GymOutput, when set, is Gym's output (`gym eval run --output FILE`:
	// FILE, or its directory when FILE is rollouts.jsonl), shown beside
	// the rollouts of GymRun (default: the latest run). It may not exist yet.
	GymOutput string
	GymRun    string
	// StalledAfter marks a rollout in flight stalled when its last sign of
	// life is older (design §8; DefaultStalledAfter); 0 marks none.
	StalledAfter time.Duration
	// MaxRollouts bounds the rollouts.jsonl rows the viewer keeps in
	// memory; past it the oldest are no longer listed, and their runs say
	// how many (0: DefaultMaxRollouts).
	MaxRollouts int
}

// Handler serves the viewer's pages and JSON API over one capture dir.
type Handler struct {
	opts   Options
	now    func() time.Time // the clock of durations in flight
	log    *zap.Logger
	dir    *captureDir
	counts countCache

	mu      sync.Mutex // index, scan, live, orders, splits, gym
	index   *rolloutIndex
	scan    *dirScan
	live    *liveState
	watch   watchState
	orders  map[orderKey]*order
	lastErr string
	logged  time.Time

	notKeptLogged bool // the first rows let go were logged
	repeatLogged  bool // a rollout id of two runs was logged

	splits    map[string]*splitStats // by run (timesplit.go)
	gym       *gymOutput             // nil without Gym's output (gympage.go)
	gymLogged string

	mapMu    sync.Mutex
	mapCache *serviceMapCache
}

// New returns the handler of opts.CaptureDir.
func New(opts Options) (*Handler, error) {
	if opts.CaptureDir == "" {
		return nil, errors.New("no capture dir")
	}
	if err := ValidateJaegerURL(opts.JaegerURL); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	dir := newCaptureDir(opts.CaptureDir)
	h := &Handler{
		opts: opts, now: time.Now, log: log, dir: dir,
		index: newRolloutIndex(dir, opts.MaxRollouts), scan: newDirScan(dir), live: newLiveState(dir), orders: map[orderKey]*order{},
		splits: map[string]*splitStats{},
	}
	if opts.GymOutput != "" {
		h.gym = newGymOutput(opts.GymOutput, opts.GymRun)
	}
	return h, nil
}

// Close releases the capture dir's descriptor.
func (h *Handler) Close() error {
	h.dir.close()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gym != nil && h.gym.dir != nil {
		h.gym.dir.close()
	}
	return nil
}

// refreshLocked reads what rollouts.jsonl and the directory gained. A
// failure leaves what was read and is reported on the runs page and in the
// log (at most once a minute). Callers hold h.mu.
func (h *Handler) refreshLocked() {
	err := errors.Join(h.index.refresh(), h.scan.refresh(time.Now(), h.index))
	if len(h.index.notKept) > 0 && !h.notKeptLogged {
		h.notKeptLogged = true
		h.log.Warn("The viewer keeps the newest rollouts only: the oldest are no longer listed (their runs count them); raise max_rollouts (otelcol-gym view --max-rollouts) to list more, about 480 bytes of memory a rollout",
			zap.String("capture_dir", h.opts.CaptureDir), zap.Int("max_rollouts", h.index.max))
	}
	if h.index.repeated != "" && !h.repeatLogged {
		h.repeatLogged = true
		h.log.Warn("The capture dir holds more than one run with the same rollout ids: Gym reuses its rollout ids in every run and clears <id>.capture.jsonl when it dispatches an id again, so an earlier run's <id>.spans.jsonl sits beside the later run's capture file. "+
			"The viewer shows each run apart and a rollout page only its own model calls; to keep the runs' files apart, use a capture dir per run (Gym's model_call_capture_dir and the collector's NEMO_GYM_CAPTURE_DIR)",
			zap.String("capture_dir", h.opts.CaptureDir), zap.String("rollout_id", h.index.repeated), zap.Strings("runs", h.index.repeatedRuns[:]))
	}
	h.refreshGymLocked()
	h.live.refresh(h.now(), h.scan, h.index)
	h.noteErr(err)
}

// noteErr keeps a refresh's error for the runs page and logs it (at most
// once a minute). Callers hold h.mu.
func (h *Handler) noteErr(err error) {
	if err == nil {
		h.lastErr = ""
		return
	}
	h.lastErr = err.Error()
	if time.Since(h.logged) > time.Minute {
		h.logged = time.Now()
		h.log.Warn("Cannot read the capture dir", zap.String("capture_dir", h.opts.CaptureDir), zap.Error(err))
	}
}

// errBadID is a rollout id that is no file name (design §5.1's rule).
var errBadID = errors.New("not a rollout id that names a file (^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$)")

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "the viewer is read-only")
		return
	}
	if h.opts.LocalOnly && !localHost(r.Host) {
		writeError(w, http.StatusForbidden, "the viewer answers only to localhost or an IP address")
		return
	}
	if !plainPath(r) {
		writeError(w, http.StatusBadRequest, "bad path")
		return
	}
	q := r.URL.Query()
	switch p := r.URL.Path; p {
	case "/", "/index.html":
		serveAsset(w, r, "index.html")
	case "/api/runs":
		page := h.runs()
		h.mu.Lock()
		if h.lastErr != "" {
			page.MapError = strings.TrimSpace(page.MapError + " " + h.lastErr)
		}
		h.mu.Unlock()
		writeJSON(w, r, page)
	case "/api/rollouts":
		lq, ok := parseListQuery(q)
		if !ok {
			writeError(w, http.StatusBadRequest, "bad sort, order, offset or limit")
			return
		}
		writeJSON(w, r, h.list(lq))
	case "/api/rollout":
		page, err := h.readRollout(q.Get("id"), q.Get("run"))
		if err != nil {
			h.writeFileError(w, err)
			return
		}
		writeJSON(w, r, page)
	case "/api/runsummary":
		sum, err := h.readRunSummary(q.Get("run"))
		if err != nil {
			h.writeFileError(w, err)
			return
		}
		writeJSON(w, r, sum)
	case "/api/timesplit":
		writeJSON(w, r, h.runSplit(q.Get("run")))
	case "/api/gymoutput":
		writeJSON(w, r, h.gymOutputPage(q.Get("run")))
	case "/api/capture":
		h.serveCapture(w, r, q.Get("id"), q.Get("n"))
	case "/api/servicemap":
		edges, err := h.serviceMap()
		if err != nil {
			h.writeFileError(w, err)
			return
		}
		page := mapPage{Run: q.Get("run"), Edges: edges[q.Get("run")]}
		if page.Edges == nil {
			page.Edges = []mapEdge{}
		}
		writeJSON(w, r, page)
	default:
		if name, ok := strings.CutPrefix(p, "/assets/"); ok {
			serveAsset(w, r, name)
			return
		}
		writeError(w, http.StatusNotFound, "not found")
	}
}

// serveCapture answers /api/capture: line n of a rollout's capture file, the
// whole model exchange with its request and response.
func (h *Handler) serveCapture(w http.ResponseWriter, r *http.Request, id, nStr string) {
	name, ok := rolloutFile(id, captureSuffix)
	if !ok {
		h.writeFileError(w, errBadID)
		return
	}
	n, err := strconv.Atoi(nStr)
	if err != nil || n < 0 {
		writeError(w, http.StatusBadRequest, "n is a line number")
		return
	}
	f, _, err := h.dir.open(name)
	if err != nil {
		h.writeFileError(w, err)
		return
	}
	defer f.Close()
	var found []byte
	i := 0
	_, err = eachLine(f, maxLineBytes, func(line []byte) error {
		if i == n {
			found = bytes.Clone(line)
			return errStop
		}
		i++
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		h.writeFileError(w, err)
		return
	}
	if found == nil {
		writeError(w, http.StatusNotFound, "no such line in the capture file")
		return
	}
	if !json.Valid(found) {
		writeError(w, http.StatusUnprocessableEntity, "the capture line is not JSON")
		return
	}
	var b bytes.Buffer
	json.HTMLEscape(&b, found)
	writeBody(w, r, "application/json", b.Bytes())
}

func (h *Handler) writeFileError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, errBadID):
		writeError(w, http.StatusBadRequest, errBadID.Error())
	case errors.Is(err, fs.ErrNotExist):
		writeError(w, http.StatusNotFound, "no such file in the capture dir")
	case errors.Is(err, errNotRegular):
		writeError(w, http.StatusForbidden, "not a regular file (symbolic links are not followed)")
	case errors.Is(err, errTooLarge):
		writeError(w, http.StatusUnprocessableEntity, "the file is larger than the viewer reads")
	default:
		h.log.Warn("Cannot read the capture dir", zap.String("capture_dir", h.opts.CaptureDir), zap.Error(err))
		writeError(w, http.StatusInternalServerError, "cannot read the capture dir")
	}
}

// plainPath refuses a request path with a dot-dot segment, a backslash, a
// NUL, an empty segment or an escaped character (%2F among them): no route
// of the viewer has one.
func plainPath(r *http.Request) bool {
	p := r.URL.Path
	if r.URL.RawPath != "" || !strings.HasPrefix(p, "/") {
		return false
	}
	return !strings.Contains(p, "..") && !strings.Contains(p, "//") && !strings.ContainsAny(p, "\\\x00%")
}

// localHost reports whether a Host header names localhost or an IP address.
func localHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.EqualFold(host, "localhost") || net.ParseIP(host) != nil
}

func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	b, err := json.Marshal(v) // escapes <, > and & in strings
	if err != nil {
		writeError(w, http.StatusInternalServerError, "cannot encode the answer")
		return
	}
	writeBody(w, r, "application/json", b)
}

// writeBody answers with b, or 304 when the client has it (its ETag is a
// hash of b, so a polling page downloads and redraws only what changed).
func writeBody(w http.ResponseWriter, r *http.Request, contentType string, b []byte) {
	sum := fnv.New64a()
	sum.Write(b)
	etag := `"` + strconv.FormatUint(sum.Sum64(), 36) + `"`
	hd := w.Header()
	hd.Set("ETag", etag)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Type", contentType)
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(b)
}

func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		if t = strings.TrimSpace(t); t == etag || t == "W/"+etag {
			return true
		}
	}
	return false
}

func writeError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

var _ io.Closer = (*Handler)(nil)
