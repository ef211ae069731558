package asyncevent_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRuntimePackagesBuildNoTestcontainers holds docs/library.md's "What each import
// costs" to the build: of this module's packages, only the container path, the test
// kit and the CLI may depend on testcontainers-go or the Docker client it brings.
func TestRuntimePackagesBuildNoTestcontainers(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	allowed := map[string]bool{
		"github.com/asyncevent/asyncevent/dynamodblocal/container": true,
		"github.com/asyncevent/asyncevent/asynceventtest":          true,
		"github.com/asyncevent/asyncevent/cmd/asyncevent":          true,
	}
	pkgs, err := exec.Command(goBin, "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(pkgs)) {
		if allowed[p] {
			continue
		}
		deps, err := exec.Command(goBin, "list", "-deps", p).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", p, err)
		}
		for _, d := range strings.Fields(string(deps)) {
			if strings.HasPrefix(d, "github.com/testcontainers/") || strings.HasPrefix(d, "github.com/moby/moby/") {
				t.Errorf("%s builds %s", p, d)
				break
			}
		}
	}
}
