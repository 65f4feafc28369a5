// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// plan is what the orchestrator decided in advance about one rollout.
type plan struct {
	task, n       int
	failFirst     bool // the first attempt fails and is re-dispatched as -a1
	failModelCall int  // index of a model call that fails, -1 for none
}

// makePlans draws the rollouts' fates from the seed, so a run is repeatable.
func makePlans(c *config) []plan {
	rng := mrand.New(mrand.NewPCG(uint64(c.seed), 0x67796d73696d)) //nolint:gosec // not for security
	plans := make([]plan, c.rollouts)
	for i := range plans {
		p := plan{task: i / c.repeats, n: i % c.repeats, failModelCall: -1}
		p.failFirst = rng.Float64() < c.retryRate
		for k := 0; k < c.modelCalls; k++ {
			if rng.Float64() < c.errorRate {
				p.failModelCall = k
				break
			}
		}
		plans[i] = p
	}
	return plans
}

// runOrchestrator is the main of the orchestrator process: it starts the
// servers, runs gym.job around every rollout, stops the servers (each
// flushes its TracerProvider), gathers the truth and prints the figures.
func runOrchestrator(c *config, args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if c.runID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		c.runID = hex.EncodeToString(b[:])
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "gymsim: %v\n", err)
		return 1
	}
	if c.captureDir != "" {
		if err := os.MkdirAll(c.captureDir, 0o750); err != nil {
			return fail(fmt.Errorf("creating the capture dir: %w", err))
		}
	}
	exe, err := executable()
	if err != nil {
		return fail(err)
	}

	children, stopAll, err := startServers(ctx, exe, args, c, stderr)
	if err != nil {
		return fail(err)
	}

	truthFile := c.truth
	c.truth = truthPart(truthFile, roleOrchestrator)
	p, err := newProvider(ctx, c, stderr)
	if err != nil {
		stopAll()
		return fail(err)
	}
	truth, err := newTruthWriter(c.truth)
	if err != nil {
		stopAll()
		return fail(err)
	}
	m := newSpanMaker(c, p.tp, truth)
	client := newHTTPClient(m, c.concurrency)

	start := time.Now()
	attempts, failures := driveRollouts(ctx, c, m, client, "http://"+children[roleAgent].addr+"/run")
	loadDone := time.Now()

	code := 0
	created := truth.created.Load()
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	defer scancel()
	total, err := p.shutdown(sctx)
	if err != nil {
		fmt.Fprintf(stderr, "gymsim: %v\n", err)
		code = 1
	}
	if err := truth.close(); err != nil {
		fmt.Fprintf(stderr, "gymsim: %v\n", err)
		code = 1
	}
	parts := []string{c.truth}
	for _, role := range serverRoles {
		n, st, err := children[role].stop()
		if err != nil {
			fmt.Fprintf(stderr, "gymsim: %v\n", err)
			code = 1
		}
		created += n
		total = total.add(st)
		parts = append(parts, truthPart(truthFile, role))
	}
	end := time.Now()
	if truthFile != "" {
		if err := concatTruth(truthFile, parts); err != nil {
			fmt.Fprintf(stderr, "gymsim: %v\n", err)
			code = 1
		}
	}
	if failures > 0 {
		fmt.Fprintf(stderr, "gymsim: %d rollouts failed\n", failures)
		code = 1
	}
	if !total.ok() {
		fmt.Fprintf(stderr, "gymsim: spans lost: %s\n", total)
		code = 1
	}
	elapsed := end.Sub(start)
	fmt.Fprintf(stdout, "gymsim: run %s, span groups [%s], observability %v: %d rollouts (%d attempts), %d spans in %.3fs (load %.3fs, flush %.3fs): %.0f spans/s; export %s\n",
		c.runID, c.groups, c.observability, c.rollouts, attempts, created,
		elapsed.Seconds(), loadDone.Sub(start).Seconds(), end.Sub(loadDone).Seconds(),
		float64(created)/elapsed.Seconds(), total)
	return code
}

// startServers starts the server processes of serverRoles, the agent last
// (it is told the model's and the resources server's addresses). stopAll
// closes their stdin and waits for each to exit; on an error the ones
// started are stopped.
func startServers(ctx context.Context, exe string, args []string, c *config, stderr io.Writer) (map[string]*child, func(), error) {
	children := map[string]*child{}
	stopAll := func() {
		for _, ch := range children {
			_ = ch.stdin.Close()
		}
		for _, ch := range children {
			<-ch.waitc //nolint:errcheck // its exit was reported when it ended
		}
	}
	for _, role := range serverRoles {
		var extra []string
		if role == roleAgent {
			extra = []string{"--model-addr=" + children[roleModel].addr, "--resources-addr=" + children[roleResources].addr}
		}
		ch, err := startChild(ctx, exe, childArgs(args, c, role, extra...), role, stderr)
		if err != nil {
			stopAll()
			return nil, nil, err
		}
		children[role] = ch
	}
	return children, stopAll, nil
}

// driveRollouts runs gym.job around every rollout: concurrency workers send
// /run to the agent, at most rate rollouts per second, and re-dispatch a
// failed first attempt once. It returns the attempts made and the rollouts
// that failed unexpectedly.
func driveRollouts(ctx context.Context, c *config, m *spanMaker, client *httpClient, runURL string) (attempts, failures int64) {
	ctx, job := m.startManaged(ctx, groupJob, gymconv.JobSpanName, "")
	defer endSpan(job, nil)

	plans := makePlans(c)
	next := make(chan plan)
	go func() {
		defer close(next)
		start := time.Now()
		for i, p := range plans {
			if c.rate > 0 {
				at := start.Add(time.Duration(float64(i) / c.rate * float64(time.Second)))
				if d := time.Until(at); d > 0 {
					time.Sleep(d) // pacing the load, not synchronising
				}
			}
			select {
			case next <- p:
			case <-ctx.Done():
				return
			}
		}
	}()
	var nAttempts, nFailures atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < c.concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				for attempt := 0; ; attempt++ {
					nAttempts.Add(1)
					req := &simRequest{
						TaskIndex: p.task, RolloutIndex: p.n, AttemptIndex: attempt,
						FailAttempt:   p.failFirst && attempt == 0,
						FailModelCall: p.failModelCall,
					}
					rollout := ""
					if c.observability {
						rollout = rolloutID(p.task, p.n, attempt)
					}
					_, err := client.post(ctx, runURL, req, nil, rollout)
					if err == nil {
						break
					}
					if !req.FailAttempt {
						nFailures.Add(1)
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	return nAttempts.Load(), nFailures.Load()
}
