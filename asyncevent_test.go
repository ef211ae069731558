package asyncevent_test

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
)

// A caller never sees bookkeeping fields (STYLE.md). doc.go's "What a service calls"
// lists GetCapacity, GetDraw, Draw, ListStatusLogs, ListAudit and HoldEvents
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

// serviceModuleLimit is how many modules a service's module graph may hold when it
// imports only the library's root package (and dynamodblocal in its tests): what
// issue 57 allows, against 85 when the library was one module.
const serviceModuleLimit = 30

// TestAServiceModuleGetsASmallGraph builds, offline, the module of a service that
// imports the root package and, in its tests, dynamodblocal and the test kit, and
// counts its `go list -m all`: the container starter, the HTTP API, the adapters,
// the CLI and the examples are modules of their own, so none of their dependencies
// (testcontainers-go, the Docker client, chromedp, OpenTelemetry, aws-lambda-go)
// reaches it. It also holds docs/library.md's "What each import costs": no package of
// this module builds testcontainers-go or the Docker client.
func TestAServiceModuleGetsASmallGraph(t *testing.T) {
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "go on PATH")
	repo, err := filepath.Abs(".")
	require.NoError(t, err)
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/service\n\ngo 1.26.0\n\nrequire github.com/asyncevent/asyncevent v0.0.0\n\n" +
			"replace github.com/asyncevent/asyncevent => " + repo + "\n",
		"main.go": "package main\n\nimport \"github.com/asyncevent/asyncevent\"\n\nvar _ = asyncevent.New\n\nfunc main() {}\n",
		"main_test.go": "package main\n\nimport (\n\t\"testing\"\n\n\t\"github.com/asyncevent/asyncevent/asynceventtest\"\n" +
			"\t\"github.com/asyncevent/asyncevent/dynamodblocal\"\n)\n\nfunc TestIt(t *testing.T) { _, _ = dynamodblocal.Start, asynceventtest.NewTable }\n",
	}
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	run := func(args ...string) string {
		cmd := exec.Command(goBin, args...)
		// Offline: the module cache holds what building and testing this module put
		// there (the go.mod files of its whole graph, the code of what it builds),
		// which is what tidy and a listing with -e need; GOWORK=off leaves the
		// repository's workspace out.
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	run("mod", "tidy")
	modules := strings.Fields(run("list", "-m", "-e", "-f", "{{.Path}}", "all")) // -e: a module whose .info is not in the cache is still listed
	assert.LessOrEqual(t, len(modules), serviceModuleLimit, "the service's modules: %v", modules)
	for _, m := range modules {
		for _, heavy := range []string{"github.com/testcontainers/", "github.com/moby/", "github.com/chromedp/", "go.opentelemetry.io/", "github.com/aws/aws-lambda-go"} {
			assert.False(t, strings.HasPrefix(m, heavy), "the service's graph holds %s", m)
		}
	}
	deps := strings.Fields(run("list", "-deps", "-test", "./..."))
	for _, d := range deps {
		assert.False(t, strings.HasPrefix(d, "github.com/testcontainers/") || strings.HasPrefix(d, "github.com/moby/"), "the service builds %s", d)
	}
}

// TestEveryMethodRefusesBadIDs calls every public method of Client and of its Rows
// with IDs that cannot be keys, and checks that each returns ErrInvalidID and that
// nothing stored changes.
func TestEveryMethodRefusesBadIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := newIngest(t, asyncevent.Options{StatusLog: true})
	_, err := c.Submit(ctx, &sendQueue{}, "ev", "someone")
	require.NoError(t, err)
	require.NoError(t, c.FlushProgress(ctx)) // the click's count, which its timer would write at any moment
	before := asynceventtest.ScanTable(t, c.TableName())
	q := &sendQueue{}

	for _, bad := range []string{"", "a#b", strings.Repeat("x", 500), "tab\there", "nul\x00", "\xff\xfe"} {
		msg := asyncevent.Message{V: 1, RequestID: bad, EventID: "ev", UserID: "u", EventType: asyncevent.FirstCome, RequestedAt: 1}
		badEvent := asyncevent.Message{V: 1, RequestID: "r", EventID: bad, UserID: "u", EventType: asyncevent.FirstCome, RequestedAt: 1}
		calls := map[string]func() error{
			"Rows.Participate(event)": func() error { _, err := c.Rows().Participate(ctx, bad, "u"); return err },
			"Rows.Participate(user)":  func() error { _, err := c.Rows().Participate(ctx, "ev", bad); return err },
			"Submit":                  func() error { _, err := c.Submit(ctx, q, "ev", bad); return err },
			"LookupParticipation":     func() error { _, err := c.LookupParticipation(ctx, "ev", bad); return err },
			"GetRequest":              func() error { _, err := c.GetRequest(ctx, bad); return err },
			"Rows.MarkQueued":         func() error { _, err := c.Rows().MarkQueued(ctx, msg.Ref()); return err },
			"Rows.MarkQueued(event)":  func() error { _, err := c.Rows().MarkQueued(ctx, badEvent.Ref()); return err },
			"Rows.MarkEnqueueFailed":  func() error { _, err := c.Rows().MarkEnqueueFailed(ctx, msg.Ref(), errors.New("x")); return err },
			"ListUserRequests":        func() error { _, err := c.ListUserRequests(ctx, bad, asyncevent.PageOptions{}); return err },
			"ListStatusLogs":          func() error { _, err := c.ListStatusLogs(ctx, bad); return err },
			"CreateEvent": func() error {
				_, err := c.CreateEvent(ctx, asyncevent.EventSettings{EventID: bad, EventType: asyncevent.FirstCome, CapacityTotal: 1})
				return err
			},
			"GetEvent":          func() error { _, err := c.GetEvent(ctx, bad); return err },
			"GetCapacity":       func() error { _, err := c.GetCapacity(ctx, bad); return err },
			"GetDraw":           func() error { _, err := c.GetDraw(ctx, bad); return err },
			"Draw":              func() error { _, err := c.Draw(ctx, bad); return err },
			"VerifyDraw":        func() error { _, err := c.VerifyDraw(ctx, bad); return err },
			"ListEventRequests": func() error { _, err := c.ListEventRequests(ctx, bad, asyncevent.EventListOptions{}); return err },
			"EventStats":        func() error { _, err := c.EventStats(ctx, bad); return err },
			"Sweep":             func() error { _, err := c.Sweep(ctx, q, bad, asyncevent.SweepOptions{}); return err },
			"Rows.StartProcessing": func() error {
				_, err := c.Rows().StartProcessing(ctx, msg.Ref(), asyncevent.Lease{Owner: "w", Duration: time.Second})
				return err
			},
			"Rows.ClaimSeat": func() error { _, err := c.Rows().ClaimSeat(ctx, msg.Ref(), asyncevent.Lease{Owner: "w"}); return err },
			"Rows.ClaimSeat(event)": func() error {
				_, err := c.Rows().ClaimSeat(ctx, badEvent.Ref(), asyncevent.Lease{Owner: "w"})
				return err
			},
			"Rows.MarkCapacityRejected": func() error {
				_, err := c.Rows().MarkCapacityRejected(ctx, msg.Ref(), asyncevent.Lease{Owner: "w"})
				return err
			},
			"Rows.MarkFailed": func() error { _, err := c.Rows().MarkFailed(ctx, msg.Ref(), asyncevent.Failure{}); return err },
			"Rows.MarkClosed": func() error { _, err := c.Rows().MarkClosed(ctx, msg.RequestID); return err },
		}
		for name, call := range calls {
			err := call()
			if !assert.ErrorIs(t, err, asyncevent.ErrInvalidID, "%s(%q)", name, bad) {
				continue
			}
			var idErr *asyncevent.InvalidIDError
			assert.ErrorAs(t, err, &idErr, name)
		}
	}
	assert.ElementsMatch(t, before, asynceventtest.ScanTable(t, c.TableName()), "nothing stored changed")
	assert.Empty(t, q.sent)
}

// The engine under internal/ sits below the root package, which imports it: no
// package there imports the root, or one of the module's packages above it. Only
// the module's leaf packages (entity, draw, queue) and internal/ itself are below the root.
func TestInternalSitsBelowTheRoot(t *testing.T) {
	const module = "github.com/asyncevent/asyncevent"
	below := []string{module + "/internal/", module + "/entity", module + "/draw", module + "/queue"}
	files, err := filepath.Glob("internal/*/*.go")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if path != module && !strings.HasPrefix(path, module+"/") {
				continue // the standard library's, the SDK's
			}
			ok := slices.ContainsFunc(below, func(p string) bool { return path == p || strings.HasPrefix(path, p) && strings.HasSuffix(p, "/") })
			assert.True(t, ok, "%s imports %s, which is not below the root", name, path)
		}
	}
}
