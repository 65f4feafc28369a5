// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymconv

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestParentlessByDesign(t *testing.T) {
	for _, tc := range []struct {
		name  string
		attrs map[string]any
		want  bool
	}{
		{"GET /global_config_dict_yaml", nil, true},
		{"POST /aggregate_metrics", nil, true},
		{"GET", map[string]any{"http.route": "/global_config_dict_yaml"}, true},
		{"GET", map[string]any{"http.target": "/aggregate_metrics?x=1"}, true},
		{"GET", map[string]any{"url.path": "/global_config_dict_yaml"}, true},
		{"GET", map[string]any{"url.full": "http://127.0.0.1:11000/global_config_dict_yaml"}, true},
		{"POST /run", nil, false},
		{"POST /v1/responses", map[string]any{"url.path": "/v1/responses"}, false},
		{"GET /global_config_dict_yaml", map[string]any{"url.path": "/run"}, false}, // the attribute wins over the name
		{"GET", map[string]any{"url.path": "/aggregate_metrics/extra"}, false},
		{"GET", map[string]any{"url.full": "::not a url"}, false},
		{"aggregate_metrics", nil, false},
	} {
		attrs := pcommon.NewMap()
		assert.NoError(t, attrs.FromRaw(tc.attrs))
		assert.Equal(t, tc.want, ParentlessByDesign(tc.name, attrs), "%s %v", tc.name, tc.attrs)
	}
}
