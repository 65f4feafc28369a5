// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymscoresextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension"

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// mlflow sends a score as an assessment (feedback, source CODE) of the
// rollout's trace, through MLflow's REST API (mlflow 3.17.2:
// POST /api/3.0/mlflow/traces/{trace_id}/assessments with a CreateAssessment
// message in JSON, field names as in assessments.proto). MLflow names an
// OTLP trace tr-<32 hex>. MLflow answers 404 while the trace is not
// ingested yet; the queue retries it.
type mlflow struct {
	client *http.Client
	base   string
}

type mlflowAssessment struct {
	Name     string            `json:"assessment_name"`
	TraceID  string            `json:"trace_id"`
	Source   mlflowSource      `json:"source"`
	Feedback mlflowFeedback    `json:"feedback"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

type mlflowSource struct {
	Type string `json:"source_type"`
	ID   string `json:"source_id"`
}

// mlflowFeedback's value is a google.protobuf.Value: a JSON number or string.
type mlflowFeedback struct {
	Value any `json:"value"`
}

func newMLflow(client *http.Client, base string) *mlflow {
	return &mlflow{client: client, base: strings.TrimSuffix(base, "/")}
}

// mlflowTraceID is MLflow's id of an OTLP trace.
func mlflowTraceID(hex string) string { return "tr-" + hex }

func (m *mlflow) send(ctx context.Context, s score, retry bool) error {
	id := mlflowTraceID(s.TraceID)
	if retry && m.has(ctx, id, s) {
		return nil // an earlier try was taken; its answer was lost
	}
	a := mlflowAssessment{Name: s.Name, TraceID: id, Source: mlflowSource{Type: "CODE", ID: sourceID},
		Metadata: map[string]string{gymconv.RolloutAttribute: s.RolloutID}}
	if s.Number != nil {
		a.Feedback.Value = *s.Number
	} else {
		a.Feedback.Value = s.Label
	}
	if s.Masked {
		a.Metadata["masked"] = "true"
	}
	return postJSON(ctx, m.client, m.base+"/api/3.0/mlflow/traces/"+id+"/assessments", map[string]any{"assessment": a})
}

// has: the trace already holds s as an assessment of ours (the same name,
// source and value), read with GET /api/3.0/mlflow/traces/get. Creating an
// assessment is not idempotent in MLflow, so a retry checks first; a read
// that fails says no (the create then answers for itself).
func (m *mlflow) has(ctx context.Context, id string, s score) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.base+"/api/3.0/mlflow/traces/get?"+url.Values{"trace_id": {id}}.Encode(), http.NoBody)
	if err != nil {
		return false
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return false
	}
	var body struct {
		Trace struct {
			Info struct {
				Assessments []struct {
					Name     string       `json:"assessment_name"`
					Source   mlflowSource `json:"source"`
					Feedback struct {
						Value any `json:"value"`
					} `json:"feedback"`
				} `json:"assessments"`
			} `json:"trace_info"`
		} `json:"trace"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&body) != nil {
		return false
	}
	for _, a := range body.Trace.Info.Assessments {
		if a.Name == s.Name && a.Source.ID == sourceID && valueText(a.Feedback.Value) == s.value() {
			return true
		}
	}
	return false
}

// valueText is a feedback value as score.value writes it.
func valueText(v any) string {
	if f, ok := v.(float64); ok {
		return score{Number: &f}.value()
	}
	return fmt.Sprint(v)
}
