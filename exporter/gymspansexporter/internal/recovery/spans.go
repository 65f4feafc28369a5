// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package recovery // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/recovery"

// Recovery of a P extent (combined_spans rest, internal/journal): its spans
// are a blob in the dead index's data file, not lines of the combined file.
// A blob whose CRC fails (a data file cut by a power loss) is not taken. Its
// keys refill the dedup window all the same, as do those of a blob whose data
// file was removed once its spans were in their files.

import (
	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"
)

// readSpansExtent takes what recovery needs of a P extent.
func (rec *recoverer) readSpansExtent(rc *recovered, x journal.Extent, done, smFrom uint64) {
	rc.keys = append(rc.keys, x.Keys...)
	if x.Seq < done && x.Seq < smFrom {
		return
	}
	blob, ok := rc.dead.Blob(x)
	if !ok {
		rc.missing += max(len(x.Keys), 1)
		return
	}
	batches, err := journal.DecodeBlob(blob)
	if err != nil {
		rec.Warn("recover_decode", "the journal's span data could not be read back", zap.Error(err))
		return
	}
	for _, bb := range batches {
		rc.lines++
		rec.takeLine(rc, x, nil, bb.Traces, bb.Wrote, done, smFrom)
	}
}
