// Package knowledge embeds gpudx's curated knowledge base: one JSON entry
// per error under <domain>/<slug>.json, and the registry of the names the
// entries mention under _registry/.
package knowledge

import "embed"

// FS holds the entry files, rooted at this directory.
//
//go:embed */*.json
var FS embed.FS
