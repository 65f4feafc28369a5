// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// httpClient is Gym's server_utils.request: the one place outbound calls go
// through. With the http_client group on it opens a CLIENT span "HTTP POST"
// and injects traceparent from inside it; with the group off there is no span
// and no header, exactly as in Gym.
type httpClient struct {
	c *http.Client
	m *spanMaker
}

func newHTTPClient(m *spanMaker, concurrency int) *httpClient {
	tr := &http.Transport{
		MaxIdleConns:        4 * concurrency,
		MaxIdleConnsPerHost: 4 * concurrency,
		IdleConnTimeout:     90 * time.Second,
	}
	return &httpClient{c: &http.Client{Transport: tr, Timeout: 10 * time.Minute}, m: m}
}

// post sends in as JSON to url and decodes the answer into out. rollout is
// the rollout the CLIENT span belongs to (for the truth); the span carries
// nemo.gym.rollout.id only when the current-rollout context is set. A
// transport error or a 5xx answer is an error recorded on the span.
func (h *httpClient) post(ctx context.Context, url string, in, out any, rollout string) (int, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return 0, fmt.Errorf("encoding a request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("building a request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")

	var span trace.Span
	if h.m.groups[groupHTTPClient] {
		attrs := []attribute.KeyValue{
			conventions.HTTPRequestMethodKey.String(http.MethodPost),
			conventions.URLFullKey.String(url),
		}
		if id := currentRollout(ctx); id != "" {
			attrs = append(attrs, attribute.String(gymconv.RolloutAttribute, id))
		}
		var sctx context.Context
		sctx, span = h.m.client.Start(ctx, "HTTP POST", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
		h.m.record(span, "HTTP POST", trace.SpanKindClient, rollout)
		h.m.prop.Inject(sctx, propagation.HeaderCarrier(req.Header))
	}

	status, err := h.do(req, out)
	if span != nil {
		if status != 0 {
			span.SetAttributes(conventions.HTTPResponseStatusCodeKey.Int(status))
		}
		endSpan(span, err)
	}
	return status, err
}

func (h *httpClient) do(req *http.Request, out any) (int, error) {
	resp, err := h.c.Do(req)
	if err != nil {
		return 0, &simError{typ: "aiohttp.ClientConnectionError", msg: err.Error()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, &simError{typ: "aiohttp.ClientPayloadError", msg: err.Error()}
	}
	if resp.StatusCode >= 500 {
		return resp.StatusCode, &simError{typ: "aiohttp.ClientResponseError", msg: fmt.Sprintf("%d, message='%s', url='%s'", resp.StatusCode, http.StatusText(resp.StatusCode), req.URL)}
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, &simError{typ: "json.JSONDecodeError", msg: err.Error()}
		}
	}
	return resp.StatusCode, nil
}
