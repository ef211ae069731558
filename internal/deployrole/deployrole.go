// Package deployrole reads a function's role from the SAM template (deploy/template.yaml),
// for the tests that hold each role to the calls its code makes.
package deployrole

import (
	"fmt"
	"os"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Statement is one statement of a function's inline policy: its actions, sorted, and
// its resources as written ("!GetAtt Table.Arn", "!Sub ${Table.Arn}/index/*").
type Statement struct {
	Actions   []string
	Resources []string
}

// Read returns the statements of function's inline policies in the template at path,
// by Sid.
func Read(path, function string) (map[string]Statement, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Resources map[string]struct {
			Properties struct {
				Policies []struct {
					Statement []struct {
						Sid      string      `yaml:"Sid"`
						Action   []string    `yaml:"Action"`
						Resource []yaml.Node `yaml:"Resource"`
					} `yaml:"Statement"`
				} `yaml:"Policies"`
			} `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("deployrole: %s: %w", path, err)
	}
	fn, ok := doc.Resources[function]
	if !ok {
		return nil, fmt.Errorf("deployrole: %s: no resource %s", path, function)
	}
	out := map[string]Statement{}
	for _, p := range fn.Properties.Policies {
		for _, s := range p.Statement {
			st := Statement{Actions: slices.Sorted(slices.Values(s.Action))}
			for _, r := range s.Resource {
				if r.Tag != "" && r.Tag != "!!str" {
					st.Resources = append(st.Resources, r.Tag+" "+r.Value)
				} else {
					st.Resources = append(st.Resources, r.Value)
				}
			}
			out[s.Sid] = st
		}
	}
	return out, nil
}

// TableOnly and TableAndIndexes are the resources of a statement on the table alone
// and on the table and its indexes.
var (
	TableOnly       = []string{"!GetAtt Table.Arn"}
	TableAndIndexes = []string{"!GetAtt Table.Arn", "!Sub ${Table.Arn}/index/*"}
)
