// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// How the files show a resource's service. Behind `gym eval submit` every
// process's service.name is one routing name and its own name is in
// service.name.override; the lines then show, as resource service.name, the
// service the gym processor uses (the first of service_attributes present),
// as Gym's console exporter printed it in each process, and keep the routing
// name beside it as service.name.routing. The Traces handed to the exporter
// are never changed: a backend behind the same pipeline gets the resource as
// it came.

// serviceNames is a resource's service as the files show it.
type serviceNames struct {
	display string // the first of service_attributes present
	show    bool   // display is not the resource's service.name
}

// namesOf returns res's serviceNames. A resource that already holds
// service.name.routing is shown as it is.
func (k attrKeys) namesOf(res pcommon.Map) serviceNames {
	display := k.serviceOf(res)
	routing := ""
	if v, ok := res.Get(gymconv.ServiceNameAttribute); ok {
		routing = v.AsString()
	}
	_, taken := res.Get(gymconv.RoutingServiceAttribute)
	return serviceNames{display: display, show: display != "" && display != routing && !taken}
}

// rangeAttrs calls f with each attribute of res as the files show it: with
// show, service.name is display, followed by service.name.routing with the
// resource's own service.name (or, when the resource has none, service.name
// comes last).
func (n serviceNames) rangeAttrs(res pcommon.Map, f func(k string, v pcommon.Value)) {
	if !n.show {
		res.Range(func(k string, v pcommon.Value) bool {
			f(k, v)
			return true
		})
		return
	}
	display := pcommon.NewValueStr(n.display)
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
