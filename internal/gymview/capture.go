// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import "github.com/otelcol-gym/otelcol-gym/internal/modelcall"

// exchange is one model exchange (one capture line) as the rollout page
// gets it. The request and response bodies are fetched on demand
// (/api/capture).
type exchange struct {
	N             int      `json:"n"` // line number in the capture file, for /api/capture
	ModelCallID   string   `json:"model_call_id"`
	Dialect       string   `json:"dialect"`
	Model         string   `json:"model"`
	ResponseModel string   `json:"response_model,omitempty"`
	Start         int64    `json:"start"` // ns after the rollout's first start
	End           int64    `json:"end"`
	LatencyMS     *float64 `json:"latency_ms"`
	LatencyTTFTMS *float64 `json:"latency_ttft_ms"`
	InputTokens   *int64   `json:"input_tokens,omitempty"`
	OutputTokens  *int64   `json:"output_tokens,omitempty"`
	StatusCode    int      `json:"status_code"`
	ErrorCategory string   `json:"error_category,omitempty"`
	ResponseID    string   `json:"response_id,omitempty"`
	SpanID        string   `json:"span_id,omitempty"` // the model-call span it was joined to
	Match         string   `json:"match,omitempty"`   // how: "response_id" or "time"

	startAbs, endAbs int64
}

// parseCaptureLine reads one capture line (modelcall.ParseLine, which the
// gymcapture processor reads them with too); n is its line number.
func parseCaptureLine(n int, line []byte) (*exchange, bool) {
	l, ok := modelcall.ParseLine(line)
	if !ok {
		return nil, false
	}
	return &exchange{
		N: n, ModelCallID: l.ModelCallID, Dialect: l.Dialect, Model: l.Model, ResponseModel: l.ResponseModel,
		LatencyMS: l.LatencyMS, LatencyTTFTMS: l.TTFTMS, InputTokens: l.InputTokens, OutputTokens: l.OutputTokens,
		StatusCode: l.StatusCode, ErrorCategory: l.ErrorCategory, ResponseID: l.ResponseID,
		startAbs: l.Start, endAbs: l.End,
	}, true
}
