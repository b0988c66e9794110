"""The project's newest release, in its one home.

The installed package's own version comes from git (the tag `vX.Y.Z` of a release, a `.devN`
version between releases: setuptools-scm, pyproject.toml). What the tree must name before the
package is built is this release: the audit image's default tag, the provider schema's version,
the policy pack's, the template's pin and CHANGELOG.md's newest section. tests/unit/test_release.py
holds them equal to it, and the release workflow (.github/workflows/release.yml, tools/release.py)
refuses a tag that is not `v` + RELEASE."""

RELEASE = "0.1.0"
