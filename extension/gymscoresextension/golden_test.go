// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymscoresextension

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/<backend>_requests.txt from what the sender sent (inspect the diff by eye)")

// TestRequestsGolden: every request a real Gym run's scores make, whole
// (path, query and JSON body), per backend, as Phoenix's and MLflow's own
// clients shape them (phoenix/server/api/routers/v1/annotations.py,
// mlflow/protos/assessments.proto), sorted.
func TestRequestsGolden(t *testing.T) {
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			source := realGymScores(t)
			f := newFakeBackend(t, kind)
			s, _, _ := testSender(t, f, source, t.TempDir(), neverGiveUp(), 100)
			s.round(t.Context())
			got := strings.Join(f.requests(), "\n") + "\n"
			path := filepath.Join("testdata", kind+"_requests.txt")
			if *update {
				require.NoError(t, os.WriteFile(path, []byte(got), 0o600))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, string(want), got)
		})
	}
}
