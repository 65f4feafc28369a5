// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// sink takes what a reader reads from one file, in file order.
type sink interface {
	// batch takes a batch of spans; an error stops the reading.
	batch(td ptrace.Traces) error
	// skip takes a line that held no readable span, and why.
	skip(s skipped)
}

// skipped is input that was read past: a line (or, for a multi-line
// console object, the line it started on) that could not be read.
type skipped struct {
	File   string
	Line   int
	Reason string
}

func (s skipped) String() string { return fmt.Sprintf("%s:%d: %s", s.File, s.Line, s.Reason) }

// reason names why a line was skipped; a torn last line (no newline at the
// end of the file, as a killed writer leaves it) says so.
func reason(l line, what string) string {
	if !l.newline {
		return what + " (a torn last line: no newline at the end of the file)"
	}
	return what
}
