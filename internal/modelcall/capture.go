// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package modelcall

import (
	"bytes"
	"encoding/json"
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

type rawLine struct {
	ModelCallID   any `json:"model_call_id"`
	Dialect       any `json:"dialect"`
	ModelRef      any `json:"model_ref"`
	StartedAt     any `json:"started_at"`
	CompletedAt   any `json:"completed_at"`
	LatencyMS     any `json:"latency_ms"`
	LatencyTTFTMS any `json:"latency_ttft_ms"`
	StatusCode    any `json:"status_code"`
	ErrorCategory any `json:"error_category"`
	// The bodies are looked into, not kept.
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response"`
}

type rawRequest struct {
	Model any `json:"model"`
}

type rawResponse struct {
	ID                any `json:"id"`
	Model             any `json:"model"`
	Status            any `json:"status"`
	StopReason        any `json:"stop_reason"`
	IncompleteDetails any `json:"incomplete_details"`
	Choices           any `json:"choices"`
	Usage             any `json:"usage"`
}

// ParseLine reads one capture line. A line that is not a JSON object is
// refused; a field of another type than Gym writes is taken as absent.
func ParseLine(line []byte) (Line, bool) {
	var r rawLine
	if err := json.Unmarshal(line, &r); err != nil {
		return Line{}, false
	}
	l := Line{
		ModelCallID:   text(r.ModelCallID),
		Dialect:       text(r.Dialect),
		Model:         text(field(r.ModelRef, "name")),
		Start:         unixSeconds(r.StartedAt),
		End:           unixSeconds(r.CompletedAt),
		LatencyMS:     finite(r.LatencyMS),
		TTFTMS:        finite(r.LatencyTTFTMS),
		ErrorCategory: text(r.ErrorCategory),
	}
	if c := finite(r.StatusCode); c != nil && *c >= 0 && *c < 1000 {
		l.StatusCode = int(*c)
	}
	if isObject(r.Request) {
		var req rawRequest
		_ = json.Unmarshal(r.Request, &req)
		l.RequestModel = text(req.Model)
	}
	if isObject(r.Response) {
		var resp rawResponse
		_ = json.Unmarshal(r.Response, &resp)
		l.ResponseID = text(resp.ID)
		l.ResponseModel = text(resp.Model)
		l.InputTokens = tokens(resp.Usage, "input_tokens", "prompt_tokens")
		l.OutputTokens = tokens(resp.Usage, "output_tokens", "completion_tokens")
		l.FinishReasons = finishReasons(&resp)
	}
	return l, true
}

// finishReasons are the chat choices' finish_reason, else the messages
// dialect's stop_reason, else the responses dialect's incomplete reason or
// status.
func finishReasons(r *rawResponse) []string {
	var out []string
	if choices, ok := r.Choices.([]any); ok {
		for _, c := range choices {
			if s := text(field(c, "finish_reason")); s != "" && len(out) < MaxFinishReasons {
				out = append(out, s)
			}
		}
	}
	for _, s := range []string{text(r.StopReason), text(field(r.IncompleteDetails, "reason")), text(r.Status)} {
		if len(out) == 0 && s != "" {
			out = append(out, s)
		}
	}
	return out
}

func isObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

func field(v any, key string) any {
	if m, ok := v.(map[string]any); ok {
		return m[key]
	}
	return nil
}

// text is v when it is a string, bounded; "" otherwise.
func text(v any) string {
	s, ok := v.(string)
	if !ok {
		return ""
	}
	return Bound(s)
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

func tokens(usage any, names ...string) *int64 {
	for _, n := range names {
		if f, ok := field(usage, n).(float64); ok && f >= 0 && f <= math.MaxInt32*float64(1<<16) && f == math.Trunc(f) {
			v := int64(f)
			return &v
		}
	}
	return nil
}

func unixSeconds(v any) int64 {
	s, ok := v.(float64)
	if !ok || s <= 0 || math.IsNaN(s) || s > math.MaxInt64/1e9 {
		return 0
	}
	// Microseconds are what time.time() carries; rounding there keeps
	// 1e9*s from inventing nanoseconds.
	return int64(math.Round(s*1e6)) * 1000
}

func finite(v any) *float64 {
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}
