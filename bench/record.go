// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// recorder is a minimal OTLP/HTTP traces endpoint that keeps every request
// it is sent, decoded, in arrival order. gymsim exports to it once; the
// replay sender re-encodes what it kept.
type recorder struct {
	mu   sync.Mutex
	reqs []ptrace.Traces
	srv  *http.Server
	addr string
}

func startRecorder() (*recorder, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("recorder: %w", err)
	}
	r := &recorder{addr: l.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/traces", r.handle)
	r.srv = &http.Server{Handler: mux} //nolint:gosec // loopback, short-lived
	go func() { _ = r.srv.Serve(l) }()
	return r, nil
}

func (r *recorder) handle(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	er := ptraceotlp.NewExportRequest()
	if err := er.UnmarshalProto(body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, er.Traces())
	r.mu.Unlock()
	resp, _ := ptraceotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

func (r *recorder) stop() []ptrace.Traces {
	_ = r.srv.Shutdown(context.Background())
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs
}

// Span classes: how the gym processor can know a span's rollout (design §4.2).
// Latency is reported apart for spans known at arrival and for upward roots.
const (
	classNone     uint8 = iota // in no rollout (gym.job, start-up spans)
	classDirect                // own evidence
	classDownward              // an ancestor has direct evidence
	classUpward                // only spans below it say which rollout
	// classPeer: a CLIENT span known at arrival whose callee sends no SERVER
	// span (the model server's upstream LLM): the processor holds the first
	// ones for their peer's service up to settle, then never again (design
	// §4.4), so their latency is reported apart from the known spans'.
	classPeer
)

var classNames = [...]string{"none", "direct", "downward", "upward", "peer"}

// rolloutInURL and directRollout find a span's direct evidence the way the
// gym processor does with its default settings (gymconv's names and rule).
var rolloutInURL = regexp.MustCompile("/" + regexp.QuoteMeta(gymconv.URLPrefix) + "/(" + gymconv.RolloutIDPattern + ")/")

func directRollout(s ptrace.Span) string {
	if v, ok := s.Attributes().Get(gymconv.RolloutAttribute); ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" {
		return v.Str()
	}
	for _, k := range gymconv.DefaultURLAttributes() {
		if v, ok := s.Attributes().Get(k); ok {
			if m := rolloutInURL.FindStringSubmatch(v.AsString()); m != nil {
				return m[1]
			}
			return ""
		}
	}
	return ""
}

// spanInfo is what classification needs of one span.
type spanInfo struct {
	id, parent uint64
	trace      [16]byte
	name       string
	direct     string
	kind       ptrace.SpanKind
}

// classify assigns every span of a recorded run its class (key: span id).
// It follows design §4.2 on the whole run: direct evidence, else the nearest
// ancestor's rollout, else the single rollout of the direct and downward
// spans below it (not for job spans).
func classify(reqs []ptrace.Traces) map[uint64]uint8 {
	type key struct {
		trace [16]byte
		id    uint64
	}
	spans := map[key]*spanInfo{}
	children := map[key][]key{}
	eachSpan(reqs, func(_ pcommon.Resource, s ptrace.Span) {
		si := &spanInfo{id: idOf(s.SpanID()), parent: idOf(s.ParentSpanID()), trace: s.TraceID(), name: s.Name(), direct: directRollout(s), kind: s.Kind()}
		k := key{si.trace, si.id}
		spans[k] = si
		if si.parent != 0 {
			pk := key{si.trace, si.parent}
			children[pk] = append(children[pk], k)
		}
	})
	rollout := map[key]string{}
	class := map[uint64]uint8{}
	// Direct and downward: walk up to the nearest span with evidence.
	var down func(k key, depth int) string
	down = func(k key, depth int) string {
		if r, ok := rollout[k]; ok {
			return r
		}
		si, ok := spans[k]
		if !ok || depth > 1000 {
			return ""
		}
		r := si.direct
		if r == "" && si.parent != 0 {
			r = down(key{k.trace, si.parent}, depth+1)
		}
		rollout[k] = r
		return r
	}
	serverChild := func(k key) bool {
		for _, c := range children[k] {
			if spans[c].kind == ptrace.SpanKindServer {
				return true
			}
		}
		return false
	}
	for k, si := range spans {
		switch {
		case si.kind == ptrace.SpanKindClient && (si.direct != "" || down(k, 0) != "") && !serverChild(k):
			class[k.id] = classPeer
		case si.direct != "":
			class[k.id] = classDirect
		case down(k, 0) != "":
			class[k.id] = classDownward
		}
	}
	// Upward: the rollouts of the direct/downward spans below, looking through
	// undecided ones.
	var below func(k key, set map[string]bool, depth int)
	below = func(k key, set map[string]bool, depth int) {
		if depth > 1000 {
			return
		}
		for _, c := range children[k] {
			if r := rollout[c]; r != "" {
				set[r] = true
				continue
			}
			below(c, set, depth+1)
		}
	}
	for k, si := range spans {
		if _, ok := class[k.id]; ok || si.name == gymconv.JobSpanName {
			continue
		}
		set := map[string]bool{}
		below(k, set, 0)
		if len(set) == 1 {
			class[k.id] = classUpward
		}
	}
	// The rest belong to a rollout only through an upward ancestor (the ASGI
	// spans under the agent's POST /run): they wait on its decision too.
	for k, si := range spans {
		if _, ok := class[k.id]; ok {
			continue
		}
		class[k.id] = classNone
		for p, depth := si.parent, 0; p != 0 && depth < 1000; depth++ {
			ps, ok := spans[key{k.trace, p}]
			if !ok {
				break
			}
			if class[ps.id] == classUpward {
				class[k.id] = classUpward
				break
			}
			p = ps.parent
		}
	}
	return class
}

func eachSpan(reqs []ptrace.Traces, f func(pcommon.Resource, ptrace.Span)) {
	for _, td := range reqs {
		gymtest.EachSpan(td, f)
	}
}

func idOf(id pcommon.SpanID) uint64 { return binary.BigEndian.Uint64(id[:]) }

// replaySet is the load of the replay phase: pre-encoded request bodies and,
// for every span they hold, its class and the request it travels in.
type replaySet struct {
	bodies [][]byte
	spans  []int            // spans per body
	ids    [][]uint64       // span ids per body
	class  map[uint64]uint8 // span id -> class
	total  int
}

// buildReplay re-encodes the recorded requests pass after pass until at
// least want spans are queued. Each pass is fresh work for the gym processor:
// nemo.run.id becomes "bench-p<pass>" and every trace and span id is XORed
// with a mask derived from the pass (parent and link ids alike, so the tree
// is unchanged).
func buildReplay(reqs []ptrace.Traces, want int) (*replaySet, error) {
	if len(reqs) == 0 {
		return nil, errors.New("nothing recorded to replay")
	}
	base := classify(reqs)
	rs := &replaySet{class: map[uint64]uint8{}}
	for pass := 0; rs.total < want; pass++ {
		tm, sm := passMasks(pass)
		for _, td := range reqs {
			cp := ptrace.NewTraces()
			td.CopyTo(cp)
			var ids []uint64
			rewritePass(cp, fmt.Sprintf("bench-p%d", pass), tm, sm, func(orig, now uint64) {
				ids = append(ids, now)
				rs.class[now] = base[orig]
			})
			body, err := ptraceotlp.NewExportRequestFromTraces(cp).MarshalProto()
			if err != nil {
				return nil, fmt.Errorf("encoding a replay request: %w", err)
			}
			rs.bodies = append(rs.bodies, body)
			rs.spans = append(rs.spans, len(ids))
			rs.ids = append(rs.ids, ids)
			rs.total += len(ids)
		}
		if pass > 100000 {
			return nil, errors.New("recorded run holds no spans")
		}
	}
	return rs, nil
}

// replayOnce encodes the requests for one pass: every span sent once, with
// its ids as recorded.
func replayOnce(reqs []ptrace.Traces) (*replaySet, error) {
	n := 0
	for _, td := range reqs {
		n += td.SpanCount()
	}
	return buildReplay(reqs, n)
}

func passMasks(pass int) (tm [16]byte, sm uint64) {
	if pass == 0 {
		return tm, 0
	}
	h := sha256.Sum256([]byte(fmt.Sprintf("otelcol-gym/bench/pass/%d", pass)))
	copy(tm[:], h[:16])
	return tm, binary.BigEndian.Uint64(h[16:24])
}

func xorTrace(id pcommon.TraceID, m [16]byte) pcommon.TraceID {
	if id.IsEmpty() {
		return id
	}
	for i := range id {
		id[i] ^= m[i]
	}
	return id
}

func xorSpan(id pcommon.SpanID, m uint64) pcommon.SpanID {
	if id.IsEmpty() {
		return id
	}
	v := binary.BigEndian.Uint64(id[:]) ^ m
	if v == 0 {
		v = 1
	}
	binary.BigEndian.PutUint64(id[:], v)
	return id
}

// rewritePass sets the run id and masks the ids of one request in place;
// seen is told each span's original and new id.
func rewritePass(td ptrace.Traces, run string, tm [16]byte, sm uint64, seen func(orig, now uint64)) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		rs.Resource().Attributes().PutStr(gymconv.RunAttribute, run)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				s := ss.At(k)
				orig := idOf(s.SpanID())
				s.SetTraceID(xorTrace(s.TraceID(), tm))
				s.SetSpanID(xorSpan(s.SpanID(), sm))
				s.SetParentSpanID(xorSpan(s.ParentSpanID(), sm))
				for l := 0; l < s.Links().Len(); l++ {
					ln := s.Links().At(l)
					ln.SetTraceID(xorTrace(ln.TraceID(), tm))
					ln.SetSpanID(xorSpan(ln.SpanID(), sm))
				}
				if v, ok := s.Attributes().Get(gymconv.RunAttribute); ok && v.Type() == pcommon.ValueTypeStr {
					s.Attributes().PutStr(gymconv.RunAttribute, run)
				}
				seen(orig, idOf(s.SpanID()))
			}
		}
	}
}

// classCounts summarises a class map for the log.
func classCounts(class map[uint64]uint8) string {
	var n [len(classNames)]int
	for _, c := range class {
		n[c]++
	}
	var parts []string
	for i, v := range n {
		parts = append(parts, fmt.Sprintf("%s %d", classNames[i], v))
	}
	return strings.Join(parts, ", ")
}
