// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymviewextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymviewextension"

import "github.com/otelcol-gym/otelcol-gym/internal/gymview"

// Scores is the viewer's join of rollouts.jsonl and Gym's output, for the
// gymscores extension, which sends it to a backend (design §6): nil before
// Start and without gym_output.
func (e *viewExtension) Scores() []gymview.Score {
	if e.handler == nil {
		return nil
	}
	return e.handler.Scores()
}

// CaptureDir is the capture dir the viewer shows.
func (e *viewExtension) CaptureDir() string { return e.cfg.CaptureDir }

// GymOutput is Gym's output the viewer joins ("": none).
func (e *viewExtension) GymOutput() string { return e.cfg.GymOutput }
