// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"
)

// Names written by the split (design §4.3), defined in internal/split.
const (
	attrLinkType      = split.AttrLinkType
	attrSplitRollouts = split.AttrSplitRollouts

	linkTypeJob             = split.LinkTypeJob
	linkTypeParent          = split.LinkTypeParent
	linkTypePreviousAttempt = split.LinkTypePreviousAttempt
	linkTypeRollout         = split.LinkTypeRollout
)

// planJobLinks plans into ed the count of, and links to, the rollout roots
// cut from a job span's trace (design §4.3).
func (e *engine) planJobLinks(ed *spanEdit, n *node) {
	ed.jobCount, ed.jobLinks = e.sp.JobLinks(n.key.trace)
}

// tidOf is T' of a span of rollout with run run and original trace orig.
func (e *engine) tidOf(run string, orig pcommon.TraceID, rollout string) pcommon.TraceID {
	return e.sp.TraceID(run, orig, rollout)
}
