// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package modelcall

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxString bounds every string a capture line gives (ids, model names,
// finish reasons, error categories): longer ones are cut at a rune
// boundary, invalid UTF-8 is replaced.
const MaxString = 256

// MaxFinishReasons bounds the finish reasons kept of one response.
const MaxFinishReasons = 16

// MaxToolCalls bounds the tool calls kept of one response.
const MaxToolCalls = 16

// ToolCall is a tool the model asked for in its response: the responses
// dialect's function_call output, the chat dialect's tool_calls, the
// messages dialect's tool_use content.
type ToolCall struct {
	Name   string
	CallID string // call_id, or id; "" when absent
}

// Line is what is read of one Gym capture line (one model exchange, as
// Gym's model server appends it to <rollout_id>.capture.jsonl). Only these
// fields are kept: the request and response bodies never are.
type Line struct {
	ModelCallID   string
	Dialect       string // responses, chat or messages
	Model         string // model_ref.name: the Gym model server
	RequestModel  string // request.model
	ResponseModel string // response.model
	ResponseID    string // response.id
	Start, End    int64  // started_at, completed_at in unix nanoseconds; 0 when absent
	LatencyMS     *float64
	TTFTMS        *float64
	StatusCode    int
	ErrorCategory string
	InputTokens   *int64 // usage.input_tokens, else usage.prompt_tokens
	OutputTokens  *int64 // usage.output_tokens, else usage.completion_tokens
	FinishReasons []string
	ToolCalls     []ToolCall // at most MaxToolCalls
}

// Exchange is the line as Join sees it.
func (l *Line) Exchange() Exchange {
	return Exchange{ResponseID: l.ResponseID, Start: l.Start, End: l.End}
}

// Failed reports whether the call failed: Gym gave it an error category, or
// its status code is not a success.
func (l *Line) Failed() bool {
	return l.ErrorCategory != "" || l.StatusCode >= 400
}

// ErrorType is the error.type of a failed call: Gym's error category, else
// the status code (as the HTTP conventions do); "" when it did not fail.
func (l *Line) ErrorType() string {
	switch {
	case l.ErrorCategory != "":
		return l.ErrorCategory
	case l.StatusCode >= 400:
		return strconv.Itoa(l.StatusCode)
	}
	return ""
}

// rawLine is the part of a capture line that is read (scanLine): the
// bodies' other fields are passed over without being kept. A leaf of
// another type than Gym writes is left unset.
type rawLine struct {
	ModelCallID   jsonStr
	Dialect       jsonStr
	ModelRefName  jsonStr // model_ref.name
	StartedAt     jsonNum
	CompletedAt   jsonNum
	LatencyMS     jsonNum
	LatencyTTFTMS jsonNum
	StatusCode    jsonNum
	ErrorCategory jsonStr
	RequestModel  jsonStr // request.model
	Response      rawResponse
}

// rawResponse is what is read of a capture line's response.
type rawResponse struct {
	ID               jsonStr
	Model            jsonStr
	Status           jsonStr
	StopReason       jsonStr
	IncompleteReason jsonStr       // incomplete_details.reason
	FinishReasons    []jsonStr     // choices[].finish_reason, the non-empty strings, at most MaxFinishReasons
	InputTokens      jsonNum       // usage.input_tokens
	OutputTokens     jsonNum       // usage.output_tokens
	PromptTokens     jsonNum       // usage.prompt_tokens
	CompletionTokens jsonNum       // usage.completion_tokens
	OutputCalls      []rawToolCall // output[] of type function_call, at most MaxToolCalls
	ChoiceCalls      []rawToolCall // choices[].message.tool_calls[], at most MaxToolCalls
	ContentCalls     []rawToolCall // content[] of type tool_use, at most MaxToolCalls
}

// rawToolCall is what is read of one tool call.
type rawToolCall struct {
	Name, ID jsonStr
}

// ParseLine reads one capture line. A line that is not a JSON object is
// refused; a field of another type than Gym writes is taken as absent.
func ParseLine(line []byte) (Line, bool) {
	var r rawLine
	if !scanLine(line, &r) {
		return Line{}, false
	}
	return r.line(), true
}

// line is what r gives, bounded.
func (r *rawLine) line() Line {
	resp := &r.Response
	l := Line{
		ModelCallID:   text(r.ModelCallID),
		Dialect:       text(r.Dialect),
		Model:         text(r.ModelRefName),
		Start:         unixSeconds(r.StartedAt),
		End:           unixSeconds(r.CompletedAt),
		LatencyMS:     finite(r.LatencyMS),
		TTFTMS:        finite(r.LatencyTTFTMS),
		ErrorCategory: text(r.ErrorCategory),
		RequestModel:  text(r.RequestModel),
		ResponseID:    text(resp.ID),
		ResponseModel: text(resp.Model),
		InputTokens:   tokens(resp.InputTokens, resp.PromptTokens),
		OutputTokens:  tokens(resp.OutputTokens, resp.CompletionTokens),
	}
	if c := finite(r.StatusCode); c != nil && *c >= 0 && *c < 1000 {
		l.StatusCode = int(*c)
	}
	// The finish reasons: the chat choices' finish_reason, else the messages
	// dialect's stop_reason, else the responses dialect's incomplete reason
	// or status.
	for _, c := range resp.FinishReasons {
		l.FinishReasons = append(l.FinishReasons, text(c))
	}
	for _, s := range []string{text(resp.StopReason), text(resp.IncompleteReason), text(resp.Status)} {
		if len(l.FinishReasons) == 0 && s != "" {
			l.FinishReasons = append(l.FinishReasons, s)
		}
	}
	for _, calls := range [][]rawToolCall{resp.OutputCalls, resp.ChoiceCalls, resp.ContentCalls} {
		for _, c := range calls {
			if len(l.ToolCalls) < MaxToolCalls {
				l.ToolCalls = append(l.ToolCalls, ToolCall{Name: text(c.Name), CallID: text(c.ID)})
			}
		}
	}
	return l
}

// jsonStr is a JSON string leaf; any other JSON value leaves it unset.
type jsonStr struct {
	v  string
	ok bool
}

// jsonNum is a JSON number leaf; any other JSON value leaves it unset.
type jsonNum struct {
	v  float64
	ok bool
}

// text is s bounded; "" when absent.
func text(s jsonStr) string {
	if !s.ok {
		return ""
	}
	return Bound(s.v)
}

// Bound is s cut to at most MaxString bytes at a rune boundary, with invalid
// UTF-8 replaced.
func Bound(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= MaxString {
		return s
	}
	cut := MaxString
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// tokens is the first count present that is a whole number in range.
func tokens(counts ...jsonNum) *int64 {
	for _, f := range counts {
		if f.ok && f.v >= 0 && f.v <= math.MaxInt32*float64(1<<16) && f.v == math.Trunc(f.v) {
			v := int64(f.v)
			return &v
		}
	}
	return nil
}

func unixSeconds(n jsonNum) int64 {
	if !n.ok || n.v <= 0 || math.IsNaN(n.v) || n.v > math.MaxInt64/1e9 {
		return 0
	}
	// Microseconds are what time.time() carries; rounding there keeps
	// 1e9*s from inventing nanoseconds.
	return int64(math.Round(n.v*1e6)) * 1000
}

func finite(n jsonNum) *float64 {
	if !n.ok || math.IsNaN(n.v) || math.IsInf(n.v, 0) {
		return nil
	}
	v := n.v
	return &v
}
