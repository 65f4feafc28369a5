// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"fmt"
	"os"
	"path/filepath"
)

// A `gym eval submit` job dir, as `otelcol-gym replay` leaves it: Gym's
// captures and the replayed capture dir in model-calls/, Gym's output
// (rollouts.jsonl, rollout_verdicts.jsonl) in artifacts/.
const (
	jobCaptureDir = "model-calls"
	jobGymOutput  = "artifacts"
)

// jobDir resolves `otelcol-gym view JOB_DIR` into the capture dir and, when
// the job has one, Gym's output.
func jobDir(job string) (captureDir, gymOutput string, err error) {
	captureDir = filepath.Join(job, jobCaptureDir)
	if st, err := os.Stat(captureDir); err != nil || !st.IsDir() {
		return "", "", fmt.Errorf("%s is not a gym eval submit job dir (no %s/ in it): give the capture dir with --capture-dir DIR", job, jobCaptureDir)
	}
	if st, err := os.Stat(filepath.Join(job, jobGymOutput)); err == nil && st.IsDir() {
		gymOutput = filepath.Join(job, jobGymOutput)
	}
	return captureDir, gymOutput, nil
}
