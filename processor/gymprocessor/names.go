// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/repair"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"

	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// The attribute names and values the processor writes, defined by the part
// that decides them (internal/split, internal/repair) or by the semantic
// conventions; the rollout and original trace attributes are gymconv's.
const (
	attrLinkType      = split.AttrLinkType
	attrSplitRollouts = split.AttrSplitRollouts

	linkTypeJob             = split.LinkTypeJob
	linkTypeParent          = split.LinkTypeParent
	linkTypePreviousAttempt = split.LinkTypePreviousAttempt
	linkTypeRollout         = split.LinkTypeRollout

	attrSynthetic   = repair.AttrSynthetic
	attrPeerService = string(conventions.PeerServiceKey)
	attrHTTPMethod  = string(conventions.HTTPRequestMethodKey)
)
