package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// moduleRoot is the module's root, from this package's directory.
const moduleRoot = "../.."

// Every mutant's edit applies to the code as it stands: its text is in its file
// exactly once, so a moved or reworded rule fails here before make mutants runs.
func TestEveryMutantsEditIsFoundOnce(t *testing.T) {
	names := map[string]bool{}
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			assert.False(t, names[m.name], "names are unique")
			names[m.name] = true
			assert.NotEmpty(t, m.rule, "the rule it weakens")
			assert.NotEqual(t, m.old, m.new)
			_, err := regexp.Compile(m.run)
			assert.NoError(t, err, "-run pattern")
			info, err := os.Stat(filepath.Join(moduleRoot, filepath.FromSlash(m.pkg)))
			if assert.NoError(t, err, "package") {
				assert.True(t, info.IsDir())
			}
			data, err := os.ReadFile(filepath.Join(moduleRoot, filepath.FromSlash(m.file)))
			require.NoError(t, err)
			assert.Equal(t, 1, strings.Count(string(data), m.old), "%s holds the edit's text once: %q", m.file, m.old)
		})
	}
}

func TestPlant(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "rule.go"), []byte(text), 0o644))
	}
	read := func() string {
		data, err := os.ReadFile(filepath.Join(dir, "rule.go"))
		require.NoError(t, err)
		return string(data)
	}
	m := mutant{file: "rule.go", old: "all(a, b)", new: "all(a)"}

	t.Run("plants and takes out", func(t *testing.T) {
		write("x = all(a, b)\n")
		restore, err := plant(dir, m)
		require.NoError(t, err)
		assert.Equal(t, "x = all(a)\n", read())
		require.NoError(t, restore())
		assert.Equal(t, "x = all(a, b)\n", read())
	})
	for text, count := range map[string]string{"x = all(a, c)\n": "0 times", "x = all(a, b)\ny = all(a, b)\n": "2 times"} {
		t.Run("text found "+count, func(t *testing.T) {
			write(text)
			_, err := plant(dir, m)
			require.Error(t, err)
			assert.Contains(t, err.Error(), count)
			assert.Equal(t, text, read(), "the file is left as it was")
		})
	}
}

func TestJudge(t *testing.T) {
	exit := errors.New("exit status 1")
	for _, c := range []struct {
		name   string
		output string
		err    error
		want   verdict
		failed []string
	}{
		{"a test fails", "--- FAIL: TestA (0.10s)\n    --- FAIL: TestA/sub (0.05s)\nFAIL\n", exit, verdictCaught, []string{"TestA", "TestA/sub"}},
		{"a test panics", "--- FAIL: TestB (0.00s)\npanic: boom\n", exit, verdictCaught, []string{"TestB"}},
		{"every test passes", "PASS\n", nil, verdictSurvived, nil},
		{"no test named", "testing: warning: no tests to run\nPASS\n", nil, verdictSurvived, nil},
		{"timed out before a failure", "panic: test timed out after 5m0s\n", exit, verdictError, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, judge(c.output, c.err))
			assert.Equal(t, c.failed, failedTests(c.output))
		})
	}
}
