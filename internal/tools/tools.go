//go:build tools

// Package tools pins modules that parts of the tree use before they import
// them; `go mod tidy -e` keeps them in go.mod. Delete a line once a real
// import exists.
package tools

import (
	_ "go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "go.opentelemetry.io/otel/sdk/metric"
	_ "golang.org/x/sys/unix"
	_ "gopkg.in/natefinch/lumberjack.v2"
	_ "github.com/stretchr/testify/require"
	_ "go.opentelemetry.io/collector/processor/processortest"
	_ "go.opentelemetry.io/collector/exporter/exportertest"
	_ "go.opentelemetry.io/collector/consumer/consumertest"
	_ "go.opentelemetry.io/collector/component/componenttest"
	_ "pgregory.net/rapid"
)
