// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymscoresextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension"

import (
	"context"
	"net/http"
	"strings"
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

func (m *mlflow) send(ctx context.Context, s score) error {
	id := mlflowTraceID(s.TraceID)
	a := mlflowAssessment{Name: s.Name, TraceID: id, Source: mlflowSource{Type: "CODE", ID: sourceID},
		Metadata: map[string]string{"nemo.gym.rollout.id": s.RolloutID}}
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
