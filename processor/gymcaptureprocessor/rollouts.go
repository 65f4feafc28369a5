// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"container/list"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// captureLine is one line of a rollout's capture file and the kinds of
// model-call span it has joined (a line joins one span of each kind).
type captureLine struct {
	line modelcall.Line
	// content is the line's messages (content.go) until its call is stood
	// for; nil when content is off.
	content *modelcall.Content
	taken   [modelcall.Kinds]bool
	// stood: a span stands for the call (callspan.go); parts are the spans
	// joined to it that wait for a better one to.
	stood bool
	parts []*waitingSpan
	// toolsTaken has bit i set when a tool span took the line's tool call
	// i (rolloutspans.go; modelcall.MaxToolCalls fit).
	toolsTaken uint16
}

// waitingSpan is a model-call span waiting where it lies, in its caller's
// batch (hold.go): for its capture line, or (line set) joined to it, for a
// better span of its call to stand for it (callspan.go).
type waitingSpan struct {
	span     ptrace.Span
	scope    ptrace.ScopeSpans // span's, where its chat span goes (chatspan.go)
	call     modelcall.Call
	kind     modelcall.Kind
	rollout  *rolloutState
	run      *runKinds
	provider string // gen_ai.provider.name when known
	line     *captureLine
	deadline time.Time
	queued   *list.Element // in the processor's queue, by deadline; nil once it left
	batch    *waitingBatch
}

// rolloutState is what the processor knows of one rollout's capture file.
type rolloutState struct {
	id       string
	file     string // <id>.capture.jsonl, id checked by gymconv.SafeFileID
	tail     captureTail
	lines    []*captureLine // of file number linesOf of tail
	linesOf  int
	waiting  [modelcall.Kinds][]*waitingSpan
	nWaiting int
	// waitedCalls are calls a span of which waited for its line and left
	// without it (linewait.go).
	waitedCalls []modelcall.Call
	// readRound is the processor's round that last read the file,
	// checkRound the last that looked at its name.
	readRound, checkRound uint64
	recent                *list.Element // in the processor's LRU of rollouts
	// opened is in the processor's LRU of open files while the file is
	// open; lastRead is when it was last read.
	opened   *list.Element
	lastRead time.Time
	// agentMarked: a span of the rollout is marked its agent span
	// (rolloutspans.go).
	agentMarked bool
	// firstInput and lastOutput are the first line's input and the latest
	// line's output, when content is on (content.go).
	firstInput, lastOutput *modelcall.Content
}

// add keeps a line read from the file; past maxLines it is refused. The
// lines of a file the name no longer holds are forgotten first.
func (r *rolloutState) add(l modelcall.Line, content *modelcall.Content, maxLines int) bool {
	if r.linesOf != r.tail.file {
		r.lines, r.linesOf = nil, r.tail.file
		r.firstInput, r.lastOutput = nil, nil
	}
	if len(r.lines) >= maxLines {
		return false
	}
	r.lines = append(r.lines, &captureLine{line: l, content: content})
	r.keepContent(content)
	return true
}

// joined is a waiting span that found its line.
type joined struct {
	w   *waitingSpan
	l   *captureLine
	how string
}

// joinOne joins a call that is not waiting, together with the waiting
// calls of its kind, to the lines not yet joined to that kind: the line the
// call got (nil: none) and how; the waiting spans joined go to out, taken
// out of waiting.
func (r *rolloutState) joinOne(k modelcall.Kind, c modelcall.Call, out *[]joined) (*captureLine, string) {
	free, xs := r.free(k)
	if len(free) == 0 {
		return nil, ""
	}
	ws := r.waiting[k]
	calls := make([]modelcall.Call, len(ws)+1)
	for i, w := range ws {
		calls[i] = w.call
	}
	calls[len(ws)] = c
	var got *captureLine
	how := ""
	placed := make([]bool, len(ws))
	for i, m := range modelcall.Join(calls, xs, false) {
		switch {
		case m.Call < 0:
			continue
		case m.Call == len(ws):
			got, how = free[i], m.How
		default:
			placed[m.Call] = true
			*out = append(*out, joined{w: ws[m.Call], l: free[i], how: m.How})
		}
		free[i].taken[k] = true
	}
	r.keepWaiting(k, placed)
	return got, how
}

// free are the lines not yet joined to a span of kind k, and their
// exchanges.
func (r *rolloutState) free(k modelcall.Kind) ([]*captureLine, []modelcall.Exchange) {
	var free []*captureLine
	var xs []modelcall.Exchange
	for _, l := range r.lines {
		if !l.taken[k] {
			free = append(free, l)
			xs = append(xs, l.line.Exchange())
		}
	}
	return free, xs
}

// keepWaiting keeps the waiting spans of kind k not placed.
func (r *rolloutState) keepWaiting(k modelcall.Kind, placed []bool) {
	ws := r.waiting[k]
	kept := ws[:0]
	for i, w := range ws {
		if !placed[i] {
			kept = append(kept, w)
		}
	}
	clear(ws[len(kept):])
	r.waiting[k] = kept
	r.nWaiting -= len(ws) - len(kept)
}

// join joins the rollout's waiting spans of each kind to its lines not yet
// joined to a span of that kind (modelcall.Join, without the in-order
// fallback: calls come one by one) and takes the joined spans out of
// waiting.
func (r *rolloutState) join(out []joined) []joined {
	for k := len(r.waiting) - 1; k >= 0; k-- { // the best kind first: it may stand for its call
		ws := r.waiting[k]
		if len(ws) == 0 {
			continue
		}
		free, xs := r.free(modelcall.Kind(k))
		if len(free) == 0 {
			continue
		}
		calls := make([]modelcall.Call, len(ws))
		for i, w := range ws {
			calls[i] = w.call
		}
		placed := make([]bool, len(ws))
		for i, m := range modelcall.Join(calls, xs, false) {
			if m.Call >= 0 {
				free[i].taken[k] = true
				placed[m.Call] = true
				out = append(out, joined{w: ws[m.Call], l: free[i], how: m.How})
			}
		}
		r.keepWaiting(modelcall.Kind(k), placed)
	}
	return out
}

// remove takes w out of its rollout's waiting spans.
func (r *rolloutState) remove(w *waitingSpan) {
	ws := r.waiting[w.kind]
	for i, x := range ws {
		if x == w {
			r.waiting[w.kind] = append(ws[:i], ws[i+1:]...)
			ws[len(ws)-1] = nil
			r.nWaiting--
			return
		}
	}
}
