// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

// copyDir copies a testdata capture dir into a temporary one (tests plant
// files in it).
func copyDir(t *testing.T, from string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "captures")
	require.NoError(t, os.Mkdir(dir, 0o750))
	entries, err := os.ReadDir(from)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o640))
	}
	return dir
}

func newTestHandler(t *testing.T, dir string, opts Options) *Handler {
	t.Helper()
	opts.CaptureDir = dir
	h, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	// Durations of rollouts in flight are measured against a fixed clock.
	h.now = func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }
	return h
}

func get(t testing.TB, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Host = "127.0.0.1:13180"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestAPIGolden: the answers of the JSON API over a capture dir the built
// collector wrote from a gymsim run (per_rollout preset; rollout 0-1 failed a
// model call and was re-dispatched as 0-1-a1, whose rollouts.jsonl line was
// left out so that it is in flight), compared whole with testdata/golden.
func TestAPIGolden(t *testing.T) {
	h := newTestHandler(t, copyDir(t, filepath.Join("testdata", "gymsim_retry_in_flight")), Options{JaegerURL: "http://127.0.0.1:16686"})
	for name, target := range map[string]string{
		"runs":                  "/api/runs",
		"rollouts":              "/api/rollouts?run=goldrun",
		"rollouts_failed":       "/api/rollouts?run=goldrun&failed=1",
		"rollouts_by_id_page_2": "/api/rollouts?run=goldrun&sort=id&order=asc&offset=1&limit=1",
		"rollouts_slowest":      "/api/rollouts?run=goldrun&sort=duration",
		"rollouts_q":            "/api/rollouts?run=goldrun&q=-a",
		"rollouts_other_run":    "/api/rollouts?run=nosuchrun",
		"rollout_0-1":           "/api/rollout?run=goldrun&id=0-1",
		"rollout_0-1-a1":        "/api/rollout?run=goldrun&id=0-1-a1",
		"capture_0-1_1":         "/api/capture?id=0-1&n=1",
		"servicemap":            "/api/servicemap?run=goldrun",
	} {
		t.Run(name, func(t *testing.T) { checkGolden(t, h, name, target) })
	}
}

// checkGolden compares the answer to target with testdata/golden/<name>.json.
func checkGolden(t *testing.T, h http.Handler, name, target string) {
	t.Helper()
	rec := get(t, h, target)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var pretty bytes.Buffer
	require.NoError(t, json.Indent(&pretty, rec.Body.Bytes(), "", " "))
	pretty.WriteByte('\n')
	golden := filepath.Join("testdata", "golden", name+".json")
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
		require.NoError(t, os.WriteFile(golden, pretty.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test -update to write it")
	assert.Equal(t, string(want), pretty.String())
}

// TestRolloutPageJoinsEveryExchange: in the golden run every capture line
// is joined to the gym.model.* span that answered it: by its response id,
// or, for a failed call (its response is an error, with no id), by time.
func TestRolloutPageJoinsEveryExchange(t *testing.T) {
	h := newTestHandler(t, filepath.Join("testdata", "gymsim_retry_in_flight"), Options{})
	failed := 0
	for _, id := range []string{"0-0", "0-1", "0-1-a1"} {
		p, err := h.readRollout(id, "goldrun")
		require.NoError(t, err)
		require.NotEmpty(t, p.Exchanges)
		byID := map[string]*viewSpan{}
		for _, s := range p.Spans {
			byID[s.SpanID] = s
		}
		for i, x := range p.Exchanges {
			s := byID[x.SpanID]
			require.NotNil(t, s, "%s: exchange %d joined to no span", id, i)
			assert.True(t, strings.HasPrefix(s.Name, "gym.model."), s.Name)
			assert.Equal(t, i, s.Exchange)
			if x.StatusCode == http.StatusOK {
				assert.Equal(t, "response_id", x.Match)
				assert.Equal(t, x.ResponseID, str(s.attrs.ModelRequestID))
			} else {
				assert.Equal(t, "time", x.Match)
				assert.Equal(t, "ERROR", s.Status)
				failed++
			}
		}
	}
	assert.NotZero(t, failed, "the run has a failed model call")
}

// TestSecurityHeaders: every answer, errors and pages included, carries the
// CSP and nosniff.
func TestSecurityHeaders(t *testing.T) {
	h := newTestHandler(t, t.TempDir(), Options{})
	for _, target := range []string{"/", "/index.html", "/assets/app.js", "/assets/app.css", "/api/runs", "/api/rollout?id=..", "/nope", "/assets/nope.js"} {
		rec := get(t, h, target)
		assert.Equal(t, contentSecurityPolicy, rec.Header().Get("Content-Security-Policy"), target)
		assert.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"), target)
		assert.Equal(t, "DENY", rec.Header().Get("X-Frame-Options"), target)
	}
	assert.Contains(t, contentSecurityPolicy, "script-src 'self'")
	assert.NotContains(t, contentSecurityPolicy, "unsafe")
	assert.Equal(t, "text/javascript; charset=utf-8", get(t, h, "/assets/app.js").Header().Get("Content-Type"))
	assert.Equal(t, "text/html; charset=utf-8", get(t, h, "/").Header().Get("Content-Type"))

	req := httptest.NewRequest(http.MethodPost, "/api/runs", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}

// TestPagesHaveNoInlineScript: the embedded pages load their scripts from
// files and set no markup from strings, so the CSP can forbid inline script.
func TestPagesHaveNoInlineScript(t *testing.T) {
	for name, a := range assets {
		body := string(a.body)
		switch {
		case strings.HasSuffix(name, ".html"):
			assert.NotRegexp(t, `<script(?:\s[^>]*)?>[^<]`, body, "%s: inline script", name)
			assert.NotRegexp(t, `\son[a-z]+=`, body, "%s: inline handler", name)
			assert.NotContains(t, body, "style=", "%s: inline style", name)
			assert.NotContains(t, body, "http", "%s: another host", name)
		case strings.HasSuffix(name, ".js"):
			body = strings.ReplaceAll(body, "'http://www.w3.org/2000/svg'", "") // the SVG namespace
			for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setAttribute('style'", "http://", "https://", "import("} {
				assert.NotContains(t, body, bad, "%s", name)
			}
		}
	}
}

// TestHostileRequests: request paths and parameters that try to leave the
// capture dir get 4xx, and the secret beside it never appears.
func TestHostileRequests(t *testing.T) {
	dir, secret := plantHostileDir(t)
	h := newTestHandler(t, dir, Options{LocalOnly: true})
	for _, target := range []string{
		"/api/rollout?id=..", "/api/rollout?id=../secret.txt", "/api/rollout?id=..%2Fsecret.txt",
		"/api/rollout?id=%2e%2e", "/api/rollout?id=evil%00", "/api/rollout?id=",
		"/api/rollout?id=evil", "/api/rollout?id=inside", "/api/rollout?id=up", "/api/rollout?id=fifo", "/api/rollout?id=sub",
		"/api/rollout?id=hard",
		"/api/capture?id=evil&n=0", "/api/capture?id=..&n=0", "/api/capture?id=ok&n=-1", "/api/capture?id=ok&n=x",
		"/assets/../secret.txt", "/assets/..%2fsecret.txt", "/assets/%2e%2e/secret.txt", "/%2e%2e/secret.txt",
		"/assets//app.js", "/assets/a%5cb", "/api/rollouts?sort=nope", "/api/rollouts?offset=-1",
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL.Path, req.URL.RawPath, req.URL.RawQuery, _ = splitTarget(target)
		req.RequestURI = target
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.True(t, rec.Code >= 400 && rec.Code < 500, "%s: %d", target, rec.Code)
		assert.NotContains(t, rec.Body.String(), secret, target)
	}
	assert.Equal(t, http.StatusForbidden, get(t, h, "/api/rollout?id=evil").Code, "a symlink")
	assert.Equal(t, http.StatusNotFound, get(t, h, "/api/rollout?id=missing").Code)
	// The listing never shows what is not a regular file.
	h.scan.next = time.Time{}
	body := get(t, h, "/api/runs").Body.String()
	assert.JSONEq(t, `{"runs":[{"run":"","rollouts":0,"failed":0,"in_flight":1,"duration_ms":0,"edges":0,"calls":0}]}`, body, "ok.spans.jsonl only")
	list := get(t, h, "/api/rollouts?run=").Body.String()
	assert.Contains(t, list, `"id":"ok"`)
	for _, b := range []string{body, list} {
		assert.NotContains(t, b, "evil")
		assert.NotContains(t, b, "hard")
		assert.NotContains(t, b, secret)
	}

	req := httptest.NewRequest(http.MethodGet, "/api/runs", nil)
	req.Host = "rebound.example:13180"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusForbidden, rec.Code, "a DNS-rebound name")
	for _, host := range []string{"localhost:13180", "127.0.0.1", "[::1]:13180"} {
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusOK, rec.Code, host)
	}
}

// splitTarget is what net/http makes of a request target.
func splitTarget(target string) (path, rawPath, rawQuery string, err error) {
	req, err := http.ReadRequest(bufioReader("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n"))
	if err != nil {
		return "", "", "", err
	}
	return req.URL.Path, req.URL.RawPath, req.URL.RawQuery, nil
}

// TestETag: an unchanged answer is 304; a rollout that grew is not.
func TestETag(t *testing.T) {
	dir := copyDir(t, filepath.Join("testdata", "gymsim_retry_in_flight"))
	h := newTestHandler(t, dir, Options{})
	first := get(t, h, "/api/rollout?run=goldrun&id=0-1-a1")
	etag := first.Header().Get("ETag")
	require.NotEmpty(t, etag)
	req := httptest.NewRequest(http.MethodGet, "/api/rollout?run=goldrun&id=0-1-a1", nil)
	req.Host = "127.0.0.1"
	req.Header.Set("If-None-Match", etag)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusNotModified, rec.Code)
	assert.Empty(t, rec.Body.String())

	// One more span line in the file: a new answer.
	lines, err := os.ReadFile(filepath.Join(dir, "0-1-a1.spans.jsonl"))
	require.NoError(t, err)
	appendFile(t, filepath.Join(dir, "0-1-a1.spans.jsonl"), strings.SplitAfter(string(lines), "\n")[0])
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.NotEqual(t, etag, rec.Header().Get("ETag"))
}

// TestLiveDir: a viewer started before the capture dir exists shows it once
// it does, and rollouts appear, in flight first, without a restart.
func TestLiveDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "later")
	h := newTestHandler(t, dir, Options{})
	assert.JSONEq(t, `{"runs":[]}`, get(t, h, "/api/runs").Body.String())

	src := filepath.Join("testdata", "gymsim_retry_in_flight")
	require.NoError(t, os.Mkdir(dir, 0o750))
	spans, err := os.ReadFile(filepath.Join(src, "0-0.spans.jsonl"))
	require.NoError(t, err)
	first := strings.SplitAfter(string(spans), "\n")[0]
	appendFile(t, filepath.Join(dir, "0-0.spans.jsonl"), first)
	h.scan.next = time.Time{} // the next request rescans (the scan waits a second otherwise)
	var page listPage
	require.NoError(t, json.Unmarshal(get(t, h, "/api/rollouts?run=goldrun").Body.Bytes(), &page))
	require.Len(t, page.Rows, 1)
	assert.True(t, page.Rows[0].InFlight)
	assert.Equal(t, 1, page.Rows[0].Spans)

	appendFile(t, filepath.Join(dir, "0-0.spans.jsonl"), strings.TrimPrefix(string(spans), first))
	rollouts, err := os.ReadFile(filepath.Join(src, "rollouts.jsonl"))
	require.NoError(t, err)
	for _, l := range strings.SplitAfter(string(rollouts), "\n") {
		if strings.Contains(l, `"0-0"`) {
			appendFile(t, filepath.Join(dir, "rollouts.jsonl"), l)
		}
	}
	page = listPage{}
	require.NoError(t, json.Unmarshal(get(t, h, "/api/rollouts?run=goldrun").Body.Bytes(), &page))
	require.Len(t, page.Rows, 1)
	assert.False(t, page.Rows[0].InFlight)
	assert.Equal(t, strings.Count(string(spans), "\n"), page.Rows[0].Spans)
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }
