// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// Which span stands for a model call (design §4.7). One exchange has up to
// four model-call spans, one of each kind; all of them join its capture line
// and get nemo.gym.model_call.id, and exactly one of them, the one that
// stands for the call, gets the GenAI attributes, so that a GenAI-aware
// backend counts the call, and its tokens, once. That is the best kind the
// run's model calls have (modelcall.Kind, best last: gym.model.*, else the
// model server's SERVER span, else the caller's CLIENT span, else the model
// server's call to its LLM).
//
// The spans of one call come in different batches, from different
// processes, in any order, so the first of them to join the line cannot see
// whether a better one will come. Each run learns which kinds its calls
// have (runKinds): a joined span of the best kind there is stands at once;
// one of a lesser kind stands at once when no better kind has come in the
// run and the run's first batch is over; otherwise it waits, at most
// capture_wait from its arrival, for a better span of its call to stand,
// and leaves with the id alone when one does (the best of those that came
// stands when the wait ends). The line remembers that it has a standing
// span, so a better span that comes later still leaves with the id alone:
// exactly one stands, whatever the order. Within a process a child span
// ends, and is exported, before its parent (a batch holds the call to the
// LLM before gym.model.* before the SERVER span), so in the run's first
// batch a lesser span waits for the better ones of the same batch, and in a
// steady run only a span that came before its better peer waits, never
// longer than capture_wait.

// maxRuns bounds the runs whose kinds are remembered; past it one is
// forgotten (it learns again, its spans waiting at most capture_wait).
const maxRuns = 1024

// runKinds is what a run's model calls have shown: the processor's round
// (batch or poll) its first model-call span came in, and the best kind seen
// since.
type runKinds struct {
	firstRound uint64
	best       modelcall.Kind
}

// stands reports whether a joined span of kind k stands for its call in
// round (no better span of the call has stood yet).
func (r *runKinds) stands(k modelcall.Kind, round uint64) bool {
	return k == modelcall.Kinds-1 || (k >= r.best && round != r.firstRound)
}

// runTable is the kinds of each run (resource nemo.run.id, "" for none).
type runTable map[string]*runKinds

// seen records a model-call span of kind k in run and returns the run.
func (t runTable) seen(run string, k modelcall.Kind, round uint64) *runKinds {
	r, ok := t[run]
	if !ok {
		if len(t) >= maxRuns {
			for old := range t {
				delete(t, old)
				break
			}
		}
		r = &runKinds{firstRound: round, best: k}
		t[run] = r
	}
	r.best = max(r.best, k)
	return r
}

// place puts on a span joined to line l what it gets: every attribute of
// the call when it stands for it, the call's id alone when another span
// does; false when it is to wait for a better span of its call (never when
// final: its wait is over).
func (p *captureProcessor) place(w *waitingSpan, l *captureLine, final bool) bool {
	if l.stood {
		annotatePart(w.span.Attributes(), &l.line)
		return true
	}
	if !final && !w.run.stands(w.kind, p.round) {
		return false
	}
	p.stand(l)
	p.standFor(w, l)
	return true
}

// standFor makes w the span that stands for l's call: it gets the call's
// id, and its chat span (chatspan.go) the call's attributes and messages.
func (p *captureProcessor) standFor(w *waitingSpan, l *captureLine) {
	annotatePart(w.span.Attributes(), &l.line)
	chat := addChatSpan(w, l.line.ModelCallID, p.cfg.RolloutAttribute)
	annotateCall(chat.Attributes(), &l.line, w.rollout.id, w.provider)
	putCallContent(chat.Attributes(), l.content)
	l.content = nil
	nameChatSpan(chat)
}

// stand makes l's call stood for, and lets the spans of the call that waited
// for it go, where they wait, with the id alone.
func (p *captureProcessor) stand(l *captureLine) {
	l.stood = true
	for _, w := range l.parts {
		annotatePart(w.span.Attributes(), &l.line)
		p.leave(w)
	}
	l.parts = nil
}

// waitForCall keeps w, joined to l, waiting for a better span of its call.
func (p *captureProcessor) waitForCall(w *waitingSpan, l *captureLine) {
	w.line = l
	l.parts = append(l.parts, w)
}

// leaveCall is the end of w's wait for a better span of its call: the best
// span of the call that came (w, or one that came after it and waits too)
// stands for it, and the others go with the id alone; all of them leave.
func (p *captureProcessor) leaveCall(w *waitingSpan) {
	l := w.line
	best := w
	for _, x := range l.parts {
		if x.kind > best.kind {
			best = x
		}
	}
	p.standFor(best, l)
	p.stand(l) // w and best are among the parts it lets go
}
