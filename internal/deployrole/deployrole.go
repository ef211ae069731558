// Package deployrole reads a function's role from the SAM template (deploy/template.yaml),
// for the tests that hold each role to the calls its code makes.
package deployrole

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Statement is one statement of a function's inline policy: its actions, sorted, and
// its resources as written ("!GetAtt Table.Arn", "!Sub ${Table.Arn}/index/*").
type Statement struct {
	Actions   []string
	Resources []string
}

// Read returns the statements of function's role in the template at path, by Sid:
// the inline policies of the AWS::IAM::Role its Role names (!GetAtt X.Arn), or else
// its own SAM Policies.
func Read(path, function string) (map[string]Statement, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	type statement struct {
		Sid      string    `yaml:"Sid"`
		Action   yaml.Node `yaml:"Action"`
		Resource yaml.Node `yaml:"Resource"`
	}
	var doc struct {
		Resources map[string]struct {
			Properties struct {
				Role     yaml.Node `yaml:"Role"`
				Policies []struct {
					Statement      []statement `yaml:"Statement"` // a SAM function's
					PolicyDocument struct {
						Statement []statement `yaml:"Statement"`
					} `yaml:"PolicyDocument"` // an IAM role's
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
	holder := fn
	if r := fn.Properties.Role; r.Tag == "!GetAtt" {
		name, _, _ := strings.Cut(r.Value, ".")
		if holder, ok = doc.Resources[name]; !ok {
			return nil, fmt.Errorf("deployrole: %s: %s's role %s is not in the template", path, function, name)
		}
	}
	out := map[string]Statement{}
	for _, p := range holder.Properties.Policies {
		for _, s := range append(p.Statement, p.PolicyDocument.Statement...) {
			out[s.Sid] = Statement{Actions: slices.Sorted(slices.Values(scalars(s.Action))), Resources: scalars(s.Resource)}
		}
	}
	return out, nil
}

// scalars are a node's values, written with their tags: a scalar, or a sequence of
// them.
func scalars(n yaml.Node) []string {
	nodes := []*yaml.Node{&n}
	if n.Kind == yaml.SequenceNode {
		nodes = n.Content
	}
	var out []string
	for _, c := range nodes {
		if c.Tag != "" && !strings.HasPrefix(c.Tag, "!!") {
			out = append(out, c.Tag+" "+c.Value)
		} else {
			out = append(out, c.Value)
		}
	}
	return out
}

// TableOnly and TableAndIndexes are the resources of a statement on the table alone
// and on the table and its indexes.
var (
	TableOnly       = []string{"!GetAtt Table.Arn"}
	TableAndIndexes = []string{"!GetAtt Table.Arn", "!Sub ${Table.Arn}/index/*"}
)
