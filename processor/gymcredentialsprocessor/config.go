// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcredentialsprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcredentialsprocessor"

import "github.com/otelcol-gym/otelcol-gym/internal/credentials"

// Config is the rule's lists (internal/credentials, design §6): `keys`
// and `suffixes`, each its default unless set; both `[]` turn the
// processor into a pass-through.
type Config struct {
	credentials.Config `mapstructure:",squash"`
}
