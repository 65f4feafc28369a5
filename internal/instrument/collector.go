// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// collectorTimeout bounds the one request that asks whether a collector
// answers: the command is not held up for longer.
const collectorTimeout = 2 * time.Second

// checkEndpoint validates --endpoint: an OTLP/HTTP base URL (the SDKs add
// /v1/traces).
func checkEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return errors.New("want an OTLP/HTTP URL such as http://127.0.0.1:4318")
	}
	return nil
}

// collectorAnswers posts an empty OTLP/HTTP export (no spans) to endpoint's
// /v1/traces: a collector answers it with 200 and counts nothing.
func collectorAnswers(endpoint string) error {
	client := http.Client{Timeout: collectorTimeout}
	resp, err := client.Post(strings.TrimSuffix(endpoint, "/")+"/v1/traces", "application/x-protobuf", http.NoBody)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("it answered an empty OTLP export with %s", resp.Status)
	}
	return nil
}
