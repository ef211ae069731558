#!/usr/bin/env bash
# release-modules.sh VERSION prepares the repository's modules for tag VERSION (vX.Y.Z):
# every nested module (go.work lists them) requires the library and the other nested
# modules it uses at VERSION, and drops the replace directives that point them at their
# directories (Go ignores them in a dependency, and `go install MODULE@VERSION` refuses
# a module that has one). Commit the result, then tag the library VERSION and each
# nested module DIR/VERSION (httpapi/v0.2.0, cmd/asyncevent/v0.2.0 …) on that commit.
# In the repository, go.work joins the modules whatever their go.mod files say.
set -euo pipefail
version=${1:?usage: $0 vX.Y.Z}
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "want vX.Y.Z, got $version" >&2; exit 2; }
cd "$(dirname "$0")/.."
root=$(sed -n 's/^module //p' go.mod)
dirs=$(sed -n 's|^[[:space:]]*\./\(.*\)$|\1|p' go.work)
for dir in $dirs; do
	args=()
	for path in $(cd "$dir" && go mod edit -json | sed -n 's/.*"Path": "\('"${root//\//\\/}"'[^"]*\)".*/\1/p' | sort -u); do
		[ "$path" = "$(cd "$dir" && sed -n 's/^module //p' go.mod)" ] && continue
		args+=("-require=$path@$version" "-dropreplace=$path")
	done
	[ ${#args[@]} -eq 0 ] || (cd "$dir" && go mod edit "${args[@]}")
	echo "$dir: requires ${args[*]:-nothing of this repository}"
done
