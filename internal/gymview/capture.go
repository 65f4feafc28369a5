// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"bytes"
	"encoding/json"
	"math"
)

// captureLine is the part of one Gym capture line (one model exchange, as
// Gym's model server writes it to <rollout_id>.capture.jsonl) the rollout
// page lists. The request
// and response bodies are fetched on demand (/api/capture).
type captureLine struct {
	ModelCallID string `json:"model_call_id"`
	Dialect     string `json:"dialect"`
	ModelRef    struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"model_ref"`
	StartedAt     float64         `json:"started_at"`   // unix seconds
	CompletedAt   float64         `json:"completed_at"` // unix seconds
	LatencyMS     *float64        `json:"latency_ms"`
	LatencyTTFTMS *float64        `json:"latency_ttft_ms"`
	StatusCode    int             `json:"status_code"`
	ErrorCategory *string         `json:"error_category"`
	Response      json.RawMessage `json:"response"`
}

// exchange is one model exchange as the rollout page gets it.
type exchange struct {
	N             int      `json:"n"` // line number in the capture file, for /api/capture
	ModelCallID   string   `json:"model_call_id"`
	Dialect       string   `json:"dialect"`
	Model         string   `json:"model"`
	Start         int64    `json:"start"` // ns after the rollout's first start
	End           int64    `json:"end"`
	LatencyMS     *float64 `json:"latency_ms"`
	LatencyTTFTMS *float64 `json:"latency_ttft_ms"`
	StatusCode    int      `json:"status_code"`
	ErrorCategory string   `json:"error_category,omitempty"`
	ResponseID    string   `json:"response_id,omitempty"`
	SpanID        string   `json:"span_id,omitempty"` // the model-call span it was joined to
	Match         string   `json:"match,omitempty"`   // how: "response_id" or "time"

	startAbs, endAbs int64
}

// parseCaptureLine reads one capture line; n is its line number.
func parseCaptureLine(n int, line []byte) (*exchange, bool) {
	var c captureLine
	if err := json.Unmarshal(line, &c); err != nil {
		return nil, false
	}
	x := &exchange{
		N: n, ModelCallID: c.ModelCallID, Dialect: c.Dialect, Model: c.ModelRef.Name,
		LatencyMS: finite(c.LatencyMS), LatencyTTFTMS: finite(c.LatencyTTFTMS), StatusCode: c.StatusCode,
		startAbs: unixSeconds(c.StartedAt), endAbs: unixSeconds(c.CompletedAt),
	}
	if c.ErrorCategory != nil {
		x.ErrorCategory = *c.ErrorCategory
	}
	if r := bytes.TrimSpace(c.Response); len(r) > 0 && r[0] == '{' {
		var resp struct {
			ID any `json:"id"`
		}
		_ = json.Unmarshal(r, &resp)
		x.ResponseID = str(resp.ID)
	}
	return x, true
}

func unixSeconds(s float64) int64 {
	if s <= 0 || math.IsNaN(s) || s > math.MaxInt64/1e9 {
		return 0
	}
	// Microseconds are what time.time() carries; rounding there keeps
	// 1e9*s from inventing nanoseconds.
	return int64(math.Round(s*1e6)) * 1000
}

func finite(p *float64) *float64 {
	if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
		return nil
	}
	return p
}
