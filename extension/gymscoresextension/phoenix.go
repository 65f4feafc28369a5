// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymscoresextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension"

import (
	"context"
	"net/http"
	"strings"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// phoenix sends a score as an annotation of the rollout's session (our
// spans' session.id is the rollout id: Phoenix's sessions list shows it)
// and of its trace, through Phoenix's REST API (arize-phoenix 20.26.1:
// POST /v1/session_annotations and /v1/trace_annotations, annotator_kind
// CODE). sync=true makes Phoenix answer 404 while the session or trace is
// not ingested yet instead of dropping the annotation. Phoenix upserts by
// (name, session or trace, identifier), so a repeated send replaces, never
// duplicates.
type phoenix struct {
	client *http.Client
	base   string
}

// phoenixAnnotation is AnnotationData of phoenix/server/api/routers/v1/annotations.py.
type phoenixAnnotation struct {
	SessionID     string            `json:"session_id,omitempty"`
	TraceID       string            `json:"trace_id,omitempty"`
	Name          string            `json:"name"`
	AnnotatorKind string            `json:"annotator_kind"`
	Result        phoenixResult     `json:"result"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	Identifier    string            `json:"identifier"`
}

type phoenixResult struct {
	Label *string  `json:"label,omitempty"`
	Score *float64 `json:"score,omitempty"`
}

func newPhoenix(client *http.Client, base string) *phoenix {
	return &phoenix{client: client, base: strings.TrimSuffix(base, "/")}
}

func (p *phoenix) send(ctx context.Context, s score, _ bool) error {
	a := phoenixAnnotation{Name: s.Name, AnnotatorKind: "CODE", Identifier: sourceID,
		Metadata: map[string]string{gymconv.RolloutAttribute: s.RolloutID}}
	if s.Number != nil {
		a.Result.Score = s.Number
	} else {
		a.Result.Label = &s.Label
	}
	if s.Masked {
		a.Metadata["masked"] = "true"
	}
	session, trace := a, a
	session.SessionID, trace.TraceID = s.RolloutID, s.TraceID
	if err := postJSON(ctx, p.client, p.base+"/v1/session_annotations?sync=true", map[string]any{"data": []phoenixAnnotation{session}}); err != nil {
		return err
	}
	return postJSON(ctx, p.client, p.base+"/v1/trace_annotations?sync=true", map[string]any{"data": []phoenixAnnotation{trace}})
}
