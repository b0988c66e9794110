// pulumi-sdkgen: Pulumi's own SDK generators (pkg/v3/codegen, at the Pulumi CLI's version) run on
// a package schema, as `pulumi package gen-sdk` runs them through the language plugins, which the
// module proxy does not serve. The schema is bound and validated first, as gen-sdk does (BindSpec
// with the package metaschema); every diagnostic is printed.
//
//	pulumi-sdkgen SCHEMA.json nodejs|go|python OUT_DIR
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/blang/semver"
	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

const tool = "pulumi-sdkgen"

// noPackages: the components' schema references no other package; a reference is an error.
type noPackages struct{}

func (noPackages) LoadPackage(pkg string, _ *semver.Version) (*schema.Package, error) {
	return nil, fmt.Errorf("package %s: this schema may reference no other package", pkg)
}

func (noPackages) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return nil, fmt.Errorf("package %s: this schema may reference no other package", d.Name)
}

func (noPackages) LoadPackageReference(pkg string, _ *semver.Version) (schema.PackageReference, error) {
	return nil, fmt.Errorf("package %s: this schema may reference no other package", pkg)
}

func (noPackages) LoadPackageReferenceV2(
	_ context.Context, d *schema.PackageDescriptor,
) (schema.PackageReference, error) {
	return nil, fmt.Errorf("package %s: this schema may reference no other package", d.Name)
}

func run(path, language, out string) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(text, &spec); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	loader := noPackages{}
	pkg, diags, err := schema.BindSpec(spec, loader, schema.ValidationOptions{})
	for _, d := range diags {
		fmt.Fprintln(os.Stderr, d.Error())
	}
	if err != nil {
		return err
	}
	if diags.HasErrors() {
		return errors.New("the schema does not bind")
	}
	var files map[string][]byte
	switch language {
	case "nodejs":
		files, err = nodejs.GeneratePackage(tool, pkg, nil, nil, false, loader)
	case "go":
		files, err = gogen.GeneratePackage(tool, pkg, nil)
	case "python":
		files, err = python.GeneratePackage(tool, pkg, nil, loader)
	default:
		return fmt.Errorf("unknown language %q: nodejs, go or python", language)
	}
	if err != nil {
		return err
	}
	for name, content := range files {
		target := filepath.Join(out, name)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: pulumi-sdkgen SCHEMA.json nodejs|go|python OUT_DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "pulumi-sdkgen:", err)
		os.Exit(1)
	}
}
