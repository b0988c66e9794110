// The Kubernetes resource provider (pulumi-resource-kubernetes) of the engine tier.
//
// The provider module's own main package embeds schema-embed.json and
// terraform-mapping-embed.json, which its release build generates and its module zip does not
// carry; this package serves the same provider with the files tools/engine/build.sh writes
// beside it (the schema.json of the module, with the version set).
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var schema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, schema, terraformMapping)
}
