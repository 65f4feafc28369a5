// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	conventions "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/otelcol-gym/otelcol-gym/internal/credentials"
	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// The model's messages, opt-in (capture_message_content, design §4.7):
// each capture line's messages (modelcall.ParseContent: the conventions'
// JSON, credentials removed, bounded) go on the span that stands for its
// call; the rollout's task (its first line's input) and final answer (its
// latest line's output) go on its agent span and its root span (the span
// the gym processor marked nemo.gym.rollout.root). Phoenix
// lists a session's first input and last output from its root spans'
// input.value and output.value (OpenInference's names, which the GenAI
// conventions have no counterpart of), so those two carry the task's and
// the answer's text. A line's messages are held from its read until its
// call is stood for; a rollout holds its first input and latest output.

// OpenInference's names of a span's input and output, which Phoenix shows
// (its session list: the first trace's root input, the last one's output).
const (
	attrInputValue     = "input.value"
	attrInputMimeType  = "input.mime_type"
	attrOutputValue    = "output.value"
	attrOutputMimeType = "output.mime_type"
	mimeText           = "text/plain"
)

// contentRule is the credentials rule (design §6) applied to the content:
// the keys of tool arguments and responses it names are removed.
var contentRule = credentials.Default()

// lineContent is what a capture line's messages put on spans; nil when
// content is off.
func (p *captureProcessor) lineContent(line []byte) *modelcall.Content {
	if !p.cfg.CaptureMessageContent {
		return nil
	}
	c := modelcall.ParseContent(line, contentRule.Match, p.cfg.MaxMessageBytes)
	return &c
}

// putCallContent puts a call's messages on the span that stands for it.
func putCallContent(attrs pcommon.Map, c *modelcall.Content) {
	if c == nil {
		return
	}
	putNonEmpty(attrs, string(conventions.GenAIInputMessagesKey), c.Input)
	putNonEmpty(attrs, string(conventions.GenAIOutputMessagesKey), c.Output)
	putNonEmpty(attrs, string(conventions.GenAISystemInstructionsKey), c.System)
}

// putRolloutContent puts the rollout's task and final answer on its agent
// span (messages and text) or its root span (text: what Phoenix lists).
func putRolloutContent(attrs pcommon.Map, r *rolloutState, agent bool) {
	if r.firstInput == nil {
		return
	}
	if agent {
		putNonEmpty(attrs, string(conventions.GenAIInputMessagesKey), r.firstInput.Input)
		putNonEmpty(attrs, string(conventions.GenAISystemInstructionsKey), r.firstInput.System)
		if r.lastOutput != nil {
			putNonEmpty(attrs, string(conventions.GenAIOutputMessagesKey), r.lastOutput.Output)
		}
	}
	if r.firstInput.Task != "" {
		attrs.PutStr(attrInputValue, r.firstInput.Task)
		attrs.PutStr(attrInputMimeType, mimeText)
	}
	if r.lastOutput != nil && r.lastOutput.Answer != "" {
		attrs.PutStr(attrOutputValue, r.lastOutput.Answer)
		attrs.PutStr(attrOutputMimeType, mimeText)
	}
}

func putNonEmpty(attrs pcommon.Map, k, v string) {
	if v != "" {
		attrs.PutStr(k, v)
	}
}

// keepContent records a rollout's line's content: the first line's input,
// the latest line's output.
func (r *rolloutState) keepContent(c *modelcall.Content) {
	if c == nil {
		return
	}
	if r.firstInput == nil {
		r.firstInput = &modelcall.Content{Input: c.Input, System: c.System, Task: c.Task}
	}
	if c.Output != "" || c.Answer != "" {
		r.lastOutput = &modelcall.Content{Output: c.Output, Answer: c.Answer}
	}
}
