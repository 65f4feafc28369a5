// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import "github.com/otelcol-gym/otelcol-gym/internal/timesource"

// clock is the processor's source of time; tests inject a fake one.
type clock = timesource.Source
