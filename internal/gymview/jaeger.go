// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
)

// ValidateJaegerURL accepts an absolute http(s) URL of a Jaeger UI, e.g.
// http://127.0.0.1:16686. A rollout page links to <url>/trace/<trace id>.
func ValidateJaegerURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http:// or https:// URL")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return errors.New("must have no query or fragment")
	}
	return nil
}

// jaegerTraceURL is Jaeger's page of a trace (traceID is 32 hex digits).
func jaegerTraceURL(base, traceID string) string {
	u, err := url.JoinPath(base, "trace", traceID)
	if err != nil {
		return ""
	}
	return u
}

func validHexID(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// linkedSpanIDs are the span ids a span's links (console shape) point at.
func linkedSpanIDs(links json.RawMessage) []string {
	var ls []struct {
		Context struct {
			SpanID string `json:"span_id"`
		} `json:"context"`
	}
	if json.Unmarshal(links, &ls) != nil {
		return nil
	}
	var out []string
	for _, l := range ls {
		if id := strings.TrimPrefix(l.Context.SpanID, "0x"); validHexID(id, 16) {
			out = append(out, id)
		}
	}
	return out
}
