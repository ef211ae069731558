package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/internal/localproc"
)

// axe-core, the accessibility checker the request page's browser test runs in the
// page: installed once from the npm registry into the user's cache (as the test
// kit installs its SQS emulator), never committed.
const (
	axePackage = "axe-core"
	axeVersion = "4.10.3"
	axeScript  = "node_modules/axe-core/axe.min.js"
	axeMarker  = ".asyncevent-install"
)

var axeOnce struct {
	sync.Once
	src string
	err error
}

// axeSource is axe-core's script, installed on first use; the test fails (never
// skips) when it cannot be had.
func axeSource(t *testing.T) string {
	t.Helper()
	axeOnce.Do(func() {
		dir, _, err := localproc.Install{
			CacheDir: localproc.CacheDir(axePackage),
			Name:     axePackage + "-" + axeVersion,
			Marker:   axeMarker,
			Package:  axePackage + "@" + axeVersion,
			Fill: func(ctx context.Context, npm localproc.NPM, dir string) (string, error) {
				if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private": true}`), 0o644); err != nil {
					return "", err
				}
				return axePackage + "@" + axeVersion, npm.Run(ctx, dir, "install", "--ignore-scripts", "--save-exact", axePackage+"@"+axeVersion)
			},
			Check: func(dir, marker string) error {
				if marker != axePackage+"@"+axeVersion {
					return fmt.Errorf("install in %s is %q", dir, marker)
				}
				_, err := os.Stat(filepath.Join(dir, axeScript))
				return err
			},
			Logf: t.Logf,
		}.Ensure(context.Background())
		if err != nil {
			axeOnce.err = err
			return
		}
		b, err := os.ReadFile(filepath.Join(dir, axeScript))
		axeOnce.src, axeOnce.err = string(b), err
	})
	require.NoError(t, axeOnce.err, "axe-core %s from npm (node and npm on PATH)", axeVersion)
	return axeOnce.src
}

// axeRules are the checks run: WCAG 2.0, 2.1 and 2.2, levels A and AA.
var axeRules = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"}

// axeViolation is one rule the page breaks, with the elements that break it.
type axeViolation struct {
	ID, Impact, Help string
	Nodes            []string
}

// accessibilityProblems runs axe-core in the page the browser shows and returns the
// serious and critical violations by rule, one line each. A page that reloads
// itself meanwhile (a no-script page's refresh) is checked again once it has.
func (b *browser) accessibilityProblems(src string) map[string]string {
	b.t.Helper()
	tags, _ := json.Marshal(axeRules)
	run := `(typeof axe === "object" ? Promise.resolve() : Promise.resolve((0, eval)(` + jsString(src) + `)))
		.then(() => axe.run(document, {runOnly: {type: "tag", values: ` + string(tags) + `}, resultTypes: ["violations"]}))
		.then(r => JSON.stringify(r.violations.map(v => ({ID: v.id, Impact: v.impact || "", Help: v.help, Nodes: v.nodes.map(n => n.target.join(" "))}))))`
	var out string
	var err error
	for range 5 {
		ctx, cancel := b.step()
		out, err = chromedp.Run(ctx, chromedp.Evaluate[string](run, chromedp.EvalAwaitPromise))
		cancel()
		if err == nil {
			break
		}
		b.t.Logf("axe-core: %v", err)
		b.waitFor(`document.readyState === "complete"`)
	}
	require.NoError(b.t, err, "axe-core in the page")
	var vs []axeViolation
	require.NoError(b.t, json.Unmarshal([]byte(out), &vs))
	problems := map[string]string{}
	for _, v := range vs {
		if v.Impact == "serious" || v.Impact == "critical" {
			problems[v.ID] = fmt.Sprintf("%s (%s) at %s", v.Help, v.Impact, strings.Join(v.Nodes, ", "))
		}
	}
	return problems
}
