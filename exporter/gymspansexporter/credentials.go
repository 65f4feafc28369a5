// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"context"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// credentialsMetric is the name the user finds the removals under.
const credentialsMetric = "otelcol_exporter_gymspans_credentials_removed"

// withoutCredentials is td without the attributes that carry credentials
// (design §6; internal/credentials holds the rule). The exporter does not
// mutate its input (other exporters share it), so a batch that holds one
// is copied and the copy cleaned; the common batch, with none, is td
// itself, read once.
func (e *spansExporter) withoutCredentials(ctx context.Context, td ptrace.Traces) ptrace.Traces {
	if !e.creds.InTraces(td) {
		return td
	}
	own := ptrace.NewTraces()
	td.CopyTo(own)
	if n := e.creds.RemoveFromTraces(own, e.credLog.Removed); n > 0 {
		e.metrics.ExporterGymspansCredentialsRemoved.Add(ctx, int64(n))
	}
	return own
}
