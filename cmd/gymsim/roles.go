// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"os"
	"regexp"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"

	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// The four kinds of Gym process gymsim runs, each as its own OS process.
const (
	roleOrchestrator = "orchestrator"
	roleAgent        = "agent"
	roleModel        = "model"
	roleResources    = "resources"
)

// roles maps a role to Gym's nemo.gym.server.type for it.
var roles = map[string]string{
	roleOrchestrator: "orchestrator",
	roleAgent:        gymconv.ServerTypeAgent,
	roleModel:        gymconv.ServerTypeModel,
	roleResources:    gymconv.ServerTypeResources,
}

// serverRoles are the roles the orchestrator starts as child processes, in
// start order (the agent needs the others' addresses).
var serverRoles = []string{roleModel, roleResources, roleAgent}

// Versions reported in the resource, as Gym reports its own and nemo-lens's.
const (
	gymVersion  = "0.7.0+gymsim"
	lensVersion = "0.2.0+b85578f"
)

// rolloutIDPattern is Gym's rule for rollout ids (and the one gymsim applies
// before a rollout id from a URL becomes a capture file name).
const rolloutIDPattern = `^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$`

var rolloutIDRe = regexp.MustCompile(rolloutIDPattern)

func validRolloutID(id string) bool { return rolloutIDRe.MatchString(id) }

// serverName is the Gym config name of the process of a role.
func (c *config) serverName(role string) string {
	switch role {
	case roleAgent:
		return c.agentName
	case roleModel:
		return c.modelName
	case roleResources:
		return c.resourcesName
	default:
		return "orchestrator"
	}
}

// serviceName is service.name as Gym builds it with service_name_per_server.
func (c *config) serviceName(role string) string {
	return c.serviceGroup + "/" + c.serverName(role)
}

// newResource builds the resource attributes Gym (through nemo-lens) gives a
// process: per-server service.name, the shared service.instance.id of rank 0,
// the run id, host and process identity, the SDK's own attributes, and
// those of OTEL_RESOURCE_ATTRIBUTES.
func newResource(c *config) (*resource.Resource, error) {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	attrs := []attribute.KeyValue{
		conventions.ServiceNameKey.String(c.serviceName(c.role)),
		conventions.ServiceVersionKey.String(lensVersion),
		conventions.ServiceInstanceIDKey.String(c.runID + "-rank0"),
		attribute.String("nemo.gym.service_group", c.serviceGroup),
		attribute.String("nemo.gym.server.name", c.serverName(c.role)),
		attribute.String(gymconv.ServerTypeAttribute, roles[c.role]),
		attribute.String("nemo.gym.version", gymVersion),
		attribute.String(gymconv.RunAttribute, c.runID),
		attribute.Int("dl.rank", 0),
		attribute.Int("dl.world_size", 1),
		conventions.HostNameKey.String(host),
		attribute.Int("process.pid", os.Getpid()),
		attribute.Int("host.gpu.count", 0),
	}
	// OTEL_RESOURCE_ATTRIBUTES adds to them, as it does for Gym's Python
	// SDK (Gym's own attributes win).
	res, err := resource.New(context.Background(),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
		resource.WithAttributes(attrs...),
	)
	if err != nil {
		return nil, fmt.Errorf("building the resource: %w", err)
	}
	return res, nil
}
