// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIsGymCLI(t *testing.T) {
	for prog, want := range map[string]bool{
		"/venv/bin/gym": true, "gym": true, "/venv/bin/ng_run": true, "ng_collect_rollouts": true, "nemo_gym_run": true,
		"/usr/bin/python3": false, "gymnasium": false, "/x/ngrok": false,
	} {
		assert.Equal(t, want, isGymCLI(prog), prog)
	}
}

func TestPlanRun(t *testing.T) {
	cwd, err := filepath.Abs(".")
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		env  string // NEMO_GYM_CAPTURE_DIR
		args []string
		gym  bool
		want runPlan
	}{
		{"gym, nothing given", "", []string{"eval", "run"}, true, runPlan{
			captureDir: filepath.Join(cwd, "captures"),
			overrides:  []string{"++observability_enabled=true", "++model_call_capture_dir=" + filepath.Join(cwd, "captures")},
		}},
		{"gym, the env's dir", "/data/run7", []string{"eval", "run"}, true, runPlan{
			captureDir: "/data/run7",
			overrides:  []string{"++observability_enabled=true", "++model_call_capture_dir=/data/run7"},
		}},
		{"gym, both given (+ and plain)", "/ignored", []string{"+observability_enabled=false", "model_call_capture_dir=rel/dir"}, true, runPlan{
			captureDir: filepath.Join(cwd, "rel/dir"),
		}},
		{"gym, --output FILE", "/d", []string{"eval", "run", "--output", "out/rollouts.jsonl", "++observability_enabled=true"}, true, runPlan{
			captureDir: "/d", gymOutput: filepath.Join(cwd, "out/rollouts.jsonl"),
			overrides: []string{"++model_call_capture_dir=/d"},
		}},
		{"gym, -o FILE", "/d", []string{"eval", "run", "-o", "/o/r.jsonl"}, true, runPlan{
			captureDir: "/d", gymOutput: "/o/r.jsonl",
			overrides: []string{"++observability_enabled=true", "++model_call_capture_dir=/d"},
		}},
		{"gym, ++output=", "/d", []string{"++output=/o/r.jsonl"}, true, runPlan{
			captureDir: "/d", gymOutput: "/o/r.jsonl",
			overrides: []string{"++observability_enabled=true", "++model_call_capture_dir=/d"},
		}},
		{"not gym: no overrides, Gym's settings not read", "/d", []string{"model_call_capture_dir=/x", "--output", "/o"}, false, runPlan{
			captureDir: "/d",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NEMO_GYM_CAPTURE_DIR", tc.env)
			got, err := planRun(tc.args, tc.gym)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
