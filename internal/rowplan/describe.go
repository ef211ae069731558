package rowplan

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DocValues give each param as :name, the way the access-pattern table shows it.
type DocValues struct{}

func (DocValues) Arg(p Param) any                       { return ":" + string(p) }
func (DocValues) Value(p Param) expression.ValueBuilder { return expression.Value(DocValues{}.Arg(p)) }

// placeholder matches the name and value placeholders of a built expression.
var placeholder = regexp.MustCompile(`[#:][0-9]+`)

// docParam matches a param as DocValues gives it: :name.
var docParam = regexp.MustCompile(`^:[A-Za-z][A-Za-z0-9]*$`)

// Describe writes text, a part of e, in the words of the access-pattern table:
// attribute names for their placeholders, a value the row fixes as a literal (a
// quoted string, a number, true or false), and a param as :name (a row built with
// DocValues gives each param so). A value of another kind keeps its placeholder.
func Describe(e expression.Expression, text *string) string {
	if text == nil {
		return ""
	}
	names, values := e.Names(), e.Values()
	return collapseRuns(strings.TrimSpace(placeholder.ReplaceAllStringFunc(strings.ReplaceAll(*text, "\n", " "), func(ph string) string {
		if n, ok := names[ph]; ok {
			return n
		}
		switch v := values[ph].(type) {
		case *types.AttributeValueMemberS:
			if docParam.MatchString(v.Value) {
				return v.Value
			}
			return strconv.Quote(v.Value)
		case *types.AttributeValueMemberN:
			return v.Value
		case *types.AttributeValueMemberBOOL:
			return strconv.FormatBool(v.Value)
		case *types.AttributeValueMemberNULL:
			return "null"
		}
		return ph
	})))
}

// numberedPair matches an update's "name :name" of a numbered attribute (a0 :a0),
// with whatever comes before it and after it in its clause.
var numberedPair = regexp.MustCompile(`^(.*\s)?([a-z]+)([0-9]+) :([a-z]+)([0-9]+)(\s.*)?$`)

// numbered is a clause "before name n :name n after" that numberedPair matched.
type numbered struct {
	before, name, n, after string
}

// parseNumbered reads clause as a numbered pair, false when it is none.
func parseNumbered(clause string) (numbered, bool) {
	m := numberedPair.FindStringSubmatch(clause)
	if m == nil || m[2] != m[4] || m[3] != m[5] {
		return numbered{}, false
	}
	return numbered{before: m[1], name: m[2], n: m[3], after: m[6]}, true
}

// follows reports whether b is the pair after a in a run: the same name, the next
// number, nothing between them.
func (a numbered) follows(b numbered) bool {
	x, _ := strconv.Atoi(a.n)
	y, _ := strconv.Atoi(b.n)
	return a.name == b.name && len(a.n) == len(b.n) && y == x+1 && a.after == "" && b.before == ""
}

// collapseRuns writes three or more numbered attributes of one name set alike and in
// a row (ADD a0 :a0, a1 :a1, …, a9 :a9) as their first and last: ADD a0 :a0 … a9 :a9.
func collapseRuns(text string) string {
	clauses := strings.Split(text, ", ")
	var out []string
	for i := 0; i < len(clauses); {
		first, ok := parseNumbered(clauses[i])
		j, last := i+1, first
		for ok && j < len(clauses) {
			next, isPair := parseNumbered(clauses[j])
			if !isPair || !last.follows(next) {
				break
			}
			last, j = next, j+1
		}
		if !ok || j-i < 3 {
			out = append(out, clauses[i])
			i++
			continue
		}
		out = append(out, fmt.Sprintf("%s%s%s :%s%s … %s%s :%s%s%s", first.before, first.name, first.n, first.name, first.n, last.name, last.n, last.name, last.n, last.after))
		i = j
	}
	return strings.Join(out, ", ")
}
