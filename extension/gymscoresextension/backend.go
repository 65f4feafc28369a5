// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymscoresextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension"

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// backend sends one score in a backend's own API. retry: an earlier try
// failed, and the backend may have taken it all the same (its answer was
// lost): a backend whose create is not idempotent checks first.
type backend interface {
	send(ctx context.Context, s score, retry bool) error
}

// sendError is a failed send, classified for the queue.
type sendError struct {
	// backendWide: the backend takes nothing now (down, refusing our
	// credentials, overloaded): the other scores due wait too.
	backendWide bool
	// permanent: the backend refused this score for good (a 4xx other than
	// 401, 403, 404, 408, 429): retrying cannot help.
	permanent bool
	msg       string
}

func (e *sendError) Error() string { return e.msg }

// maxErrorBody bounds what a refusal's body adds to its message.
const maxErrorBody = 512

// postJSON posts body as JSON to url and classifies a failure. A 404 is
// retried as the score's own failure: the backend has not ingested the
// rollout's spans yet (the forwarding exporter batches them).
func postJSON(ctx context.Context, client *http.Client, url string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return &sendError{permanent: true, msg: fmt.Sprintf("encoding the request: %v", err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return &sendError{permanent: true, msg: fmt.Sprintf("making the request: %v", err)}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return &sendError{backendWide: true, msg: err.Error()}
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return nil
	}
	e := &sendError{msg: fmt.Sprintf("%s answered %s: %s", req.URL.Path, resp.Status, strings.TrimSpace(string(text)))}
	switch {
	case code == http.StatusNotFound:
	case code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusRequestTimeout ||
		code == http.StatusTooManyRequests || code >= 500:
		e.backendWide = true
	default:
		e.permanent = true
	}
	return e
}
