// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package spanjson // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/spanjson"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// ServiceNames is a resource's service as the lines show it (the exporter
// decides it from its attribute keys; the zero value shows the resource as
// it is).
type ServiceNames struct {
	Display string // the first of service_attributes present
	Show    bool   // Display is not the resource's service.name
}

// rangeAttrs calls f with each attribute of res as the files show it: with
// Show, service.name is Display, followed by service.name.routing with the
// resource's own service.name (or, when the resource has none, service.name
// comes last).
func (n ServiceNames) rangeAttrs(res pcommon.Map, f func(k string, v pcommon.Value)) {
	if !n.Show {
		res.Range(func(k string, v pcommon.Value) bool {
			f(k, v)
			return true
		})
		return
	}
	display := pcommon.NewValueStr(n.Display)
	named := false
	res.Range(func(k string, v pcommon.Value) bool {
		if k == gymconv.ServiceNameAttribute {
			f(k, display)
			f(gymconv.RoutingServiceAttribute, v)
			named = true
			return true
		}
		f(k, v)
		return true
	})
	if !named {
		f(gymconv.ServiceNameAttribute, display)
	}
}
