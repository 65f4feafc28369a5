// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymscoresextension

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeBackend is Phoenix's or MLflow's score API as an httptest server: it
// answers with refusals from a script first, then takes every score, and
// counts each score it took by trace, name and value.
type fakeBackend struct {
	kind string
	srv  *httptest.Server

	mu       sync.Mutex
	refusals []int // status codes to answer next; 0 closes the connection unanswered
	lose     int   // scores to take and then answer 500 (the answer lost)
	missing  map[string]int
	taken    map[string]int // score key → times taken
	bodies   []string       // the requests taken, in order
	headers  []http.Header
}

func newFakeBackend(t *testing.T, kind string) *fakeBackend {
	f := &fakeBackend{kind: kind, taken: map[string]int{}, missing: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeBackend) refuse(codes ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refusals = append(f.refusals, codes...)
}

// notYet makes the backend answer 404 n times for trace (not ingested yet).
func (f *fakeBackend) notYet(trace string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.missing[trace] = n
}

func (f *fakeBackend) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method == http.MethodGet && f.kind == BackendMLflow && r.URL.Path == "/api/3.0/mlflow/traces/get" {
		f.serveTrace(w, strings.TrimPrefix(r.URL.Query().Get("trace_id"), "tr-"))
		return
	}
	if len(f.refusals) > 0 {
		code := f.refusals[0]
		f.refusals = f.refusals[1:]
		if code == 0 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		http.Error(w, "refused", code)
		return
	}
	var trace, name, value string
	switch f.kind {
	case BackendMLflow:
		var req struct {
			Assessment struct {
				Name     string `json:"assessment_name"`
				TraceID  string `json:"trace_id"`
				Feedback struct {
					Value any `json:"value"`
				} `json:"feedback"`
			} `json:"assessment"`
		}
		if json.Unmarshal(body, &req) != nil || r.URL.Path != "/api/3.0/mlflow/traces/"+req.Assessment.TraceID+"/assessments" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		trace, name, value = strings.TrimPrefix(req.Assessment.TraceID, "tr-"), req.Assessment.Name, textOf(req.Assessment.Feedback.Value)
	default:
		var req struct {
			Data []struct {
				SessionID string `json:"session_id"`
				TraceID   string `json:"trace_id"`
				Name      string `json:"name"`
				Result    struct {
					Label *string  `json:"label"`
					Score *float64 `json:"score"`
				} `json:"result"`
			} `json:"data"`
		}
		if json.Unmarshal(body, &req) != nil || len(req.Data) != 1 || r.URL.Query().Get("sync") != "true" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		d := req.Data[0]
		trace, name = d.TraceID, d.Name
		if r.URL.Path == "/v1/session_annotations" {
			trace = "session:" + d.SessionID
		}
		if d.Result.Score != nil {
			value = textOf(*d.Result.Score)
		} else if d.Result.Label != nil {
			value = *d.Result.Label
		}
	}
	if n := f.missing[trace]; n > 0 {
		f.missing[trace] = n - 1
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	f.taken[trace+" "+name+" "+value]++
	f.bodies = append(f.bodies, r.URL.RequestURI()+" "+string(body))
	f.headers = append(f.headers, r.Header.Clone())
	if f.lose > 0 {
		f.lose--
		http.Error(w, "taken, but the answer is lost", http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{}`))
}

// serveTrace answers MLflow's GET traces/get with the assessments taken
// for trace (names and values as taken; every source ours).
func (f *fakeBackend) serveTrace(w http.ResponseWriter, trace string) {
	type assessment struct {
		Name     string         `json:"assessment_name"`
		Source   map[string]any `json:"source"`
		Feedback map[string]any `json:"feedback"`
	}
	var as []assessment
	for k := range f.taken {
		parts := strings.SplitN(k, " ", 3)
		if parts[0] != trace {
			continue
		}
		var v any = parts[2]
		if n, err := strconv.ParseFloat(parts[2], 64); err == nil {
			v = n
		}
		as = append(as, assessment{Name: parts[1], Source: map[string]any{"source_type": "CODE", "source_id": sourceID}, Feedback: map[string]any{"value": v}})
	}
	b, _ := json.Marshal(map[string]any{"trace": map[string]any{"trace_info": map[string]any{"trace_id": "tr-" + trace, "assessments": as}}})
	_, _ = w.Write(b)
}

// textOf is a JSON value as score.value writes it.
func textOf(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// takenCounts is what the backend took, each key with its count.
func (f *fakeBackend) takenCounts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.taken {
		out[k] = v
	}
	return out
}

func (f *fakeBackend) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]string(nil), f.bodies...)
	sort.Strings(out)
	return out
}

func TestPostJSONClassifies(t *testing.T) {
	for _, tc := range []struct {
		code            int
		wide, permanent bool
	}{
		{http.StatusUnauthorized, true, false},
		{http.StatusForbidden, true, false},
		{http.StatusTooManyRequests, true, false},
		{http.StatusInternalServerError, true, false},
		{http.StatusServiceUnavailable, true, false},
		{http.StatusNotFound, false, false},
		{http.StatusBadRequest, false, true},
		{http.StatusUnprocessableEntity, false, true},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", tc.code) }))
		err := postJSON(t.Context(), srv.Client(), srv.URL+"/x", map[string]int{})
		srv.Close()
		var se *sendError
		require.ErrorAs(t, err, &se, "%d", tc.code)
		require.Equal(t, tc.wide, se.backendWide, "%d", tc.code)
		require.Equal(t, tc.permanent, se.permanent, "%d", tc.code)
		require.Contains(t, se.msg, "/x answered", "%d", tc.code)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Close()
	var se *sendError
	require.ErrorAs(t, postJSON(t.Context(), http.DefaultClient, srv.URL, 1), &se)
	require.True(t, se.backendWide, "nothing listening")
}
