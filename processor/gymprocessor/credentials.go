// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// credentialsMetric is the name the user finds credentialsRemoved under.
const credentialsMetric = "otelcol_processor_gym_credentials_removed"

// removeCredentials removes the attributes that carry credentials from a
// batch as it arrives (design §6; internal/credentials holds the rule):
// before the journal records it and before the engine reads it, so no
// record, checkpoint, held span or span handed on holds them. td is the
// processor's own (it mutates data).
func (p *gymProcessor) removeCredentials(ctx context.Context, td ptrace.Traces) {
	if n := p.creds.RemoveFromTraces(td, p.credLog.Removed); n > 0 {
		p.tel.ProcessorGymCredentialsRemoved.Add(ctx, int64(n))
	}
}
