// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"crypto/sha256"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// The span a GenAI tool reads a model call from (design §4.7): a span of its
// own, synthesized below the span that stands for the call, named as the
// GenAI conventions name an inference span ({gen_ai.operation.name}
// {gen_ai.request.model}, e.g. "chat Qwen/Qwen3-8B"), carrying the call's
// GenAI attributes, which the standing span does not (it gets the call's id
// alone, as the call's other spans do). Gym's spans keep their names:
// renaming `POST` or `HTTP POST` would mislabel them in HTTP views (Jaeger,
// the viewer), and `gym.model.*` is how every reader tells Gym's own model
// spans. The chat span:
//
//   - is INTERNAL (in-process in the conventions' terms: it describes the
//     call its parent made or served, and stays out of the service map), in
//     the standing span's resource and scope, trace and times; status ERROR
//     when the call failed;
//   - carries nemo.gym.synthetic = true (like the gym processor's service-map
//     CLIENT spans: not a span any process sent), the rollout's id, and
//     nemo.gym.model_call.server: Gym's model server (model_ref.name);
//   - has a span id any instance computes alike from the call, the first 8
//     bytes of SHA-256("otelcol-gym/chat/v1" ‖ 0x00 ‖ trace id ‖
//     nemo.gym.model_call.id), so a call stood for again (a round the gym
//     journal replays after a kill -9, a replay of the run) gives the same
//     span whichever of its spans stands for it;
//   - is made when its call is stood for with its line, once per call:
//     spans out = spans in + one per call joined to its line. A call whose
//     line never came is stood for by its span itself, with the operation
//     and conversation alone (hold.go): handed on again, it could not tell
//     that its chat span was made already, its call having no id.

// chatSpanDomain separates chat span ids from every other id derived here.
const chatSpanDomain = "otelcol-gym/chat/v1"

// chatSpanID is the id of the chat span of call (its model_call_id) in
// trace.
func chatSpanID(trace pcommon.TraceID, call string) pcommon.SpanID {
	h := sha256.New()
	h.Write([]byte(chatSpanDomain))
	h.Write([]byte{0})
	h.Write(trace[:])
	h.Write([]byte(call))
	var id pcommon.SpanID
	copy(id[:], h.Sum(nil))
	if id.IsEmpty() {
		id[7] = 1
	}
	return id
}

// addChatSpan appends to w's scope the chat span of call below w's span and
// returns it; the caller adds the call's attributes, and nameChatSpan names
// it from them.
func addChatSpan(w *waitingSpan, call, rolloutAttr string) ptrace.Span {
	parent := w.span
	chat := w.scope.Spans().AppendEmpty()
	chat.SetTraceID(parent.TraceID())
	chat.SetSpanID(chatSpanID(parent.TraceID(), call))
	chat.SetParentSpanID(parent.SpanID())
	chat.SetKind(ptrace.SpanKindInternal)
	chat.SetStartTimestamp(parent.StartTimestamp())
	chat.SetEndTimestamp(parent.EndTimestamp())
	attrs := chat.Attributes()
	attrs.EnsureCapacity(maxAnnotations + 6)
	attrs.PutBool(gymconv.SyntheticAttribute, true)
	attrs.PutStr(rolloutAttr, w.rollout.id)
	return chat
}

// nameChatSpan names the chat span from its attributes, and marks it failed
// when its call failed.
func nameChatSpan(chat ptrace.Span) {
	attrs := chat.Attributes()
	name := stringAttr(attrs, attrOperation)
	if model := stringAttr(attrs, attrRequestModel); model != "" {
		name += " " + model
	}
	chat.SetName(name)
	if errType := stringAttr(attrs, attrErrorType); errType != "" {
		chat.Status().SetCode(ptrace.StatusCodeError)
		chat.Status().SetMessage(errType)
	}
}
