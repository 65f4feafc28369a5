// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func sumPoints(data metricdata.Aggregation, attrs []string) int64 {
	match := func(set attribute.Set) bool {
		for i := 0; i+1 < len(attrs); i += 2 {
			v, ok := set.Value(attribute.Key(attrs[i]))
			if !ok || v.AsString() != attrs[i+1] {
				return false
			}
		}
		return true
	}
	var total int64
	switch d := data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes) {
				total += p.Value
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes) {
				total += p.Value
			}
		}
	}
	return total
}
