// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTemplateReservesOtherFiles(t *testing.T) {
	pt := NewTemplate("{rollout_id}.jsonl", "spans.jsonl", "spans.jsonl", "rollouts.jsonl")
	for _, id := range []string{"spans", "rollouts", "spans-2026-08-21T12-00-00.000000000"} {
		_, reason := pt.Render("", id)
		assert.Equal(t, RejectRolloutID, reason, id)
	}
	name, reason := pt.Render("", "12-3")
	assert.Empty(t, reason)
	assert.Equal(t, "12-3.jsonl", name)
	_, reason = NewTemplate("{run_id}-{rollout_id}", "").Render(strings.Repeat("r", 200), strings.Repeat("x", 200))
	assert.Equal(t, RejectRolloutID, reason, "names over 255 bytes are refused")
}
