// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// replayResult is what one replay against a collector did.
type replayResult struct {
	start, end time.Time
	sentAt     []int64 // per body: unix nanos the accepted POST started
	retries    int64
}

// replay POSTs every body of rs to url (OTLP/HTTP, application/x-protobuf)
// with workers concurrent senders, as fast as the collector accepts them. A
// refused request (429, 503: the memory_limiter or a full pipeline) is sent
// again after a short back-off; anything else is an error.
//
// With rate > 0 the sending is paced: a request goes no earlier than the time
// at which the spans before it, sent at rate spans/s, would have gone.
func replay(ctx context.Context, url string, rs *replaySet, workers int, rate float64) (*replayResult, error) {
	tr := &http.Transport{MaxIdleConns: workers, MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers,
		DisableCompression: true, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	res := &replayResult{sentAt: make([]int64, len(rs.bodies))}
	var next atomic.Int64
	var retries atomic.Int64
	var firstErr error
	var errOnce sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var due []time.Duration
	if rate > 0 {
		due = make([]time.Duration, len(rs.bodies))
		cum := 0
		for i, n := range rs.spans {
			due[i] = time.Duration(float64(cum) / rate * float64(time.Second))
			cum += n
		}
	}
	res.start = time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(rs.bodies) || ctx.Err() != nil {
					return
				}
				if due != nil {
					if d := time.Until(res.start.Add(due[i])); d > 0 {
						select {
						case <-time.After(d): // pacing the load
						case <-ctx.Done():
							return
						}
					}
				}
				backoff := 5 * time.Millisecond
				for {
					at := time.Now().UnixNano()
					status, err := post(ctx, client, url, rs.bodies[i])
					if err == nil && status == http.StatusOK {
						res.sentAt[i] = at
						break
					}
					if err == nil && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) {
						retries.Add(1)
						select {
						case <-time.After(backoff): // back-off after a refusal, as an SDK does
						case <-ctx.Done():
							return
						}
						if backoff < 500*time.Millisecond {
							backoff *= 2
						}
						continue
					}
					if err == nil {
						err = fmt.Errorf("POST %s: HTTP %d", url, status)
					}
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	res.end = time.Now()
	res.retries = retries.Load()
	return res, firstErr
}

func post(ctx context.Context, client *http.Client, url string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}
