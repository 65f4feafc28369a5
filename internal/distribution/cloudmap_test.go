// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package distribution

import (
	"path/filepath"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/loadbalancingexporter"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exportertest"
)

// TestCloudMapResolverBuilds: load_balancing's aws_cloud_map resolver, the
// one that needs the replaced aws-sdk-go-v2/service/servicediscovery
// (builder-config.yaml), cannot be reached here; this builds that code path
// with the replaced module and runs it up to the point where it would call
// AWS: the configuration unmarshals and validates, and the traces exporter
// is created with its Cloud Map resolver and client (it is not started, so
// nothing leaves the process). AWS's shared files are pointed at nothing so
// the SDK reads only the environment set here.
func TestCloudMapResolverBuilds(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")

	f := loadbalancingexporter.NewFactory()
	cfg := f.CreateDefaultConfig()
	conf := confmap.NewFromStringMap(map[string]any{
		"routing_key":        "attributes",
		"routing_attributes": []any{"nemo.run.id"},
		"protocol":           map[string]any{"otlp": map[string]any{"tls": map[string]any{"insecure": true}}},
		"resolver": map[string]any{"aws_cloud_map": map[string]any{
			"namespace": "otelcol-gym", "service_name": "gateway", "port": 14317, "health_status": "HEALTHY",
		}},
	})
	if err := conf.Unmarshal(cfg); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if err := confmap.Validate(cfg); err != nil {
		t.Fatalf("validate: %v", err)
	}
	exp, err := f.CreateTraces(t.Context(), exportertest.NewNopSettings(f.Type()), cfg)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if exp == nil {
		t.Fatal("no exporter")
	}
}
