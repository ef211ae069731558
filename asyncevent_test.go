package asyncevent_test

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/asyncevent/asyncevent"
	"github.com/stretchr/testify/assert"
)

// Review 41: STYLE "A caller never sees bookkeeping fields"; doc.go's "What a service
// calls" lists GetCapacity, GetDraw, Draw, ListStatusLogs, ListAudit and HoldEvents
// among a service's calls. What they return should carry no item bookkeeping: the
// entity type, the TTL, the seat tokens and fences, the pool version.
func TestServiceCallsReturnNoBookkeeping(t *testing.T) {
	bookkeeping := map[string]bool{"EntityType": true, "TTL": true, "Holders": true, "Void": true, "PoolVersion": true,
		"EmptyShards": true, "LocksKeptUntil": true, "LeaseOwner": true, "LeaseExpiresAt": true, "SeatShard": true, "SeatEpoch": true}
	c := reflect.TypeOf(&asyncevent.Client{})
	for _, name := range []string{"GetRequest", "GetEvent", "ListEvents", "ListUserRequests", "ListEventRequests",
		"GetCapacity", "GetDraw", "Draw", "ListStatusLogs", "ListAudit", "HoldEvents", "EventStats", "Confirm", "Release",
		"PauseEvent", "CreateEvent", "Submit", "LookupParticipation"} {
		m, ok := c.MethodByName(name)
		if !assert.True(t, ok, name) {
			continue
		}
		seen := map[reflect.Type]bool{}
		var walk func(path string, ty reflect.Type)
		walk = func(path string, ty reflect.Type) {
			for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
				ty = ty.Elem()
			}
			if ty.Kind() != reflect.Struct || seen[ty] || ty.PkgPath() != "github.com/asyncevent/asyncevent" {
				return
			}
			seen[ty] = true
			for i := 0; i < ty.NumField(); i++ {
				f := ty.Field(i)
				if !f.IsExported() {
					continue
				}
				if bookkeeping[f.Name] {
					t.Errorf("%s returns %s.%s (via %s)", name, ty.Name(), f.Name, path)
				}
				walk(path+"."+f.Name, f.Type)
			}
		}
		for i := 0; i < m.Type.NumOut(); i++ {
			walk(name, m.Type.Out(i))
		}
	}
}

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
