// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package servicemap

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	envHelperDir    = "SERVICEMAP_TEST_HELPER_DIR"
	envHelperID     = "SERVICEMAP_TEST_HELPER_ID"
	envHelperRounds = "SERVICEMAP_TEST_HELPER_ROUNDS"
)

// writerEdges is what writer id observes before its flush number round;
// the parent recomputes it to know the expected totals.
func writerEdges(id, round int) []Edge {
	rng := rand.New(rand.NewPCG(uint64(id), uint64(round)))
	out := make([]Edge, 1+rng.IntN(6))
	for i := range out {
		out[i] = randomEdge(rng)
		// A writer-specific edge too, so edges only one process saw survive.
		if rng.IntN(4) == 0 {
			out[i].Client = "writer-" + strconv.Itoa(id)
		}
	}
	return out
}

// runWriter observes and flushes rounds times into dir.
func runWriter(dir string, id, rounds int) error {
	m, err := New(dir, Options{})
	if err != nil {
		return err
	}
	for round := range rounds {
		for _, e := range writerEdges(id, round) {
			m.Observe(e)
		}
		if err := m.Flush(); err != nil {
			return fmt.Errorf("writer %d round %d: %w", id, round, err)
		}
	}
	return nil
}

// TestHelperProcess is a writer run in a child process by
// TestProcessesFlushConcurrently. It says "ready" and waits for its stdin to
// close, so all writers start together.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(envHelperDir)
	if dir == "" {
		t.Skip("only run as a child of TestProcessesFlushConcurrently")
	}
	id, err := strconv.Atoi(os.Getenv(envHelperID))
	require.NoError(t, err)
	rounds, err := strconv.Atoi(os.Getenv(envHelperRounds))
	require.NoError(t, err)
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	require.NoError(t, runWriter(dir, id, rounds))
}

func TestProcessesFlushConcurrently(t *testing.T) {
	const children, rounds = 3, 25
	dir := t.TempDir()
	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout io.Reader
		out    *bytes.Buffer
	}
	var cs []child
	for id := 1; id <= children; id++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(),
			envHelperDir+"="+dir, envHelperID+"="+strconv.Itoa(id), envHelperRounds+"="+strconv.Itoa(rounds))
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		out := &bytes.Buffer{}
		cmd.Stderr = out
		require.NoError(t, cmd.Start())
		cs = append(cs, child{cmd, stdin, stdout, out})
	}
	for i, c := range cs {
		ready := make([]byte, len("ready\n"))
		_, err := io.ReadFull(c.stdout, ready)
		require.NoError(t, err, "writer %d did not start: %s", i+1, c.out)
		require.Equal(t, "ready\n", string(ready))
	}
	for _, c := range cs {
		require.NoError(t, c.stdin.Close()) // go
	}
	// This process is writer 0, concurrently with the children.
	require.NoError(t, runWriter(dir, 0, rounds))
	for i, c := range cs {
		rest, _ := io.ReadAll(c.stdout)
		require.NoError(t, c.cmd.Wait(), "writer %d:\n%s%s", i+1, rest, c.out)
	}

	var all []Edge
	for id := 0; id <= children; id++ {
		for round := range rounds {
			all = append(all, writerEdges(id, round)...)
		}
	}
	got := tableState(readTable(t, dir))
	var calls, want uint64
	for _, e := range got {
		calls += e.Calls
	}
	for _, e := range all {
		if e.Client != e.Server { // calls within a service are not edges
			want++
		}
	}
	require.Equal(t, want, calls, "calls on disk")
	require.Equal(t, expectedTable(t, all), got, "every call of every writer, once, with its latency")
	t.Logf("%d writers × %d flushes: %d calls on %d edges", children+1, rounds, calls, len(got))
}
