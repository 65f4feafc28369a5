// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/spanjson"
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

// namesOf returns how the files show res's service. A resource that already holds
// service.name.routing is shown as it is.
func (k attrKeys) namesOf(res pcommon.Map) spanjson.ServiceNames {
	display := k.serviceOf(res)
	routing := ""
	if v, ok := res.Get(gymconv.ServiceNameAttribute); ok {
		routing = v.AsString()
	}
	_, taken := res.Get(gymconv.RoutingServiceAttribute)
	return spanjson.ServiceNames{Display: display, Show: display != "" && display != routing && !taken}
}
