package asyncevent

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Review 41: "each row is one method whose doc comment names the row, the operation,
// the key and the condition". The access-pattern table (read off the declarations)
// assigns rows to methods; every row a method of Client writes must be named, in
// quotes, in that method's doc comment.
func TestReview41RowMethodDocsNameEveryRowTheyWrite(t *testing.T) {
	docSrc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	line := regexp.MustCompile(`^//\t(\S.{30})(\S.*?)\s+(PutItem|UpdateItem|DeleteItem|ConditionCheck)\s`)
	rowsOf := map[string][]string{}
	for _, l := range strings.Split(string(docSrc), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		row := strings.TrimSpace(m[1])
		for _, method := range strings.Split(m[2], ",") {
			method = strings.TrimSpace(method)
			rowsOf[method] = append(rowsOf[method], row)
		}
	}
	require.NotEmpty(t, rowsOf["ClaimSeat"])

	docs := map[string]string{}
	fset := token.NewFileSet()
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Doc == nil {
				continue
			}
			if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok && id.Name == "Client" {
					docs[fn.Name.Name] = strings.Join(strings.Fields(fn.Doc.Text()), " ")
				}
			}
		}
	}
	for _, method := range []string{"Participate", "MarkQueued", "MarkEnqueueFailed", "StartProcessing", "ClaimSeat",
		"MarkCapacityRejected", "RejectSoldOut", "MarkFailed", "MarkClosed"} {
		for _, row := range rowsOf[method] {
			assert.True(t, strings.Contains(docs[method], `"`+row+`"`), "%s writes the row %q; its doc comment does not name it", method, row)
		}
	}
}
