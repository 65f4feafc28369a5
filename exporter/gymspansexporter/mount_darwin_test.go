// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"errors"
	"testing"
)

// mountTmpfs: darwin has no tmpfs; the tests that need one skip.
func mountTmpfs(*testing.T, string, string, bool) error {
	return errors.New("no tmpfs on darwin")
}
