package asyncevent

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/internal/rowexec"
	"github.com/asyncevent/asyncevent/internal/rowplan"
)

// The access-pattern table of doc.go is the team's reference; these tests hold it to
// the code. Its writes are read off the row declarations (the condition and update
// each row builds), its reads are listed here, and every row names an existing
// method. UPDATE_DOC=1 rewrites the table from the declarations.

// docRow is one row of the access-pattern table.
type docRow struct {
	name, method, operation, key string
	condition, update            string // writes only
	// read is a read's signature as a test observes the call: "GetItem <entity>" or
	// "Query <index> <partition's kind>" (TestTheTableNamesWhatEachMethodDoes).
	read string
}

// readRows are the table's reads: GetItem and Query, no condition.
var readRows = []docRow{
	{name: "get request", method: "GetRequest, Confirm, Release, CancelRequest, Rows.ClaimSeat, Processor.ProcessOne", operation: "GetItem", key: "REQ#<requestId> / META", read: "GetItem REQUEST"},
	{name: "lookup participation", method: "LookupParticipation, Submit", operation: "GetItem", key: "IDEMP#<eventId>#<userId> / LOCK, strongly consistent (Submit: a click on a paused or closed event)", read: "GetItem IDEMPOTENCY"},
	{name: "my participations", method: "ListUserRequests", operation: "Query GSI1", key: "USER#<userId>, newest first, limit 20", read: "Query GSI1 USER"},
	{name: "event requests", method: "ListEventRequests", operation: "Query GSI2", key: "EVENT#<eventId>, either order, status filter", read: "Query GSI2 EVENT"},
	{name: "event request count", method: "CountRequests", operation: "Query GSI2", key: "EVENT#<eventId>, Select COUNT", read: "Query GSI2 EVENT"},
	{name: "event progress", method: "QueueStats, GetRequest", operation: "Query", key: "EVENT#<eventId>#PROGRESS#<p>, SK T#…, each p, cached a second", read: "Query table EVENT#PROGRESS"},
	{name: "waitlist counts", method: "GetRequest", operation: "Query", key: "EVENT#<eventId>#PROGRESS#<p>, SK W#…, each p, all pages, cached 5 × ProgressCacheTTL (a WAITLISTED request's place)", read: "Query table EVENT#PROGRESS"},
	{name: "event statistics", method: "EventStats", operation: "Query GSI2", key: "EVENT#<eventId>, every request once", read: "Query GSI2 EVENT"},
	{name: "status logs", method: "ListStatusLogs", operation: "Query", key: `REQ#<requestId>, begins_with(SK, "LOG#")`, read: "Query table REQ"},
	{name: "get event", method: "GetEvent, Submit, Processor.ProcessOne, Draw, ServePrequeue, Sweep, SweepHolds, CloseEvent, PauseEvent, ResumeEvent, ExtendEvent, AddCapacity, CancelRequest, ListEvents", operation: "GetItem",
		key: "EVENT#<eventId> / CONFIG (a method of an event reads it through the client's cache, Options.EventCacheTTL; a control and a draw strongly consistent)", read: "GetItem CONFIG"},
	{name: "get capacity", method: "GetCapacity, Processor.ProcessOne, AddCapacity, ServePrequeue, ListEvents", operation: "GetItem",
		key: "EVENT#<eventId> / CAPACITY, or a shard's (the worker: a look at the request's home shard)", read: "GetItem CAPACITY"},
	{name: "get draw", method: "GetDraw, Draw, ServePrequeue", operation: "GetItem", key: "EVENT#<eventId> / DRAW", read: "GetItem DRAW"},
	{name: "admission: record", method: "Processor.ProcessOne", operation: "GetItem", key: "EVENT#<eventId> / ADMISSION, strongly consistent, each tick while a delivery waits", read: "GetItem ADMISSION"},
	{name: "admission: line", method: "Processor.ProcessOne", operation: "Query GSI2", key: "EVENT#<eventId>, GSI2SK BETWEEN through AND QAT#<now - settle>, each shard, one page", read: "Query GSI2 EVENT"},
	{name: "draw: the entries", method: "Draw, ServePrequeue", operation: "Query GSI2", key: "EVENT#<eventId>, GSI2SK up to the cutoff (the start), each shard", read: "Query GSI2 EVENT"},
	{name: "recorded entries", method: "Draw, ServePrequeue", operation: "GetItem", key: "EVENT#<eventId>#ENTRIES#<n> / SET#<entriesHash>, each chunk, strongly consistent (also VerifyDraw, VerifyPrequeue, a pre-queue place)", read: "GetItem ENTRIES"},
	{name: "stuck requests", method: "Sweep", operation: "Query GSI2", key: "EVENT#<eventId>, RECEIVED, QUEUED or PROCESSING past StuckAfter, each shard", read: "Query GSI2 EVENT"},
	{name: "hold registry", method: "HoldEvents", operation: "Query", key: "HOLD_EVENTS, every event with holds", read: "Query table HOLD_EVENTS"},
	{name: "event list", method: "ListEvents", operation: "Query", key: "EVENTS, newest first, limit 20", read: "Query table EVENTS"},
	{name: "audit trail", method: "ListAudit", operation: "Query", key: `EVENT#<eventId>, begins_with(SK, "AUDIT#")`, read: "Query table EVENT"},
	{name: "operation applied before", method: "AddCapacity, CancelRequest", operation: "GetItem", key: "EVENT#<eventId> / OP#<action>#<idempotencyKey>", read: "GetItem OPERATION"},
	{name: "due holds", method: "SweepHolds", operation: "Query", key: "EVENT#<eventId>#HOLDS#<shard>, SK < EXP#<now + 1 ms>, each shard", read: "Query table EVENT#HOLDS"},
	{name: "returned seats", method: "SweepHolds, ServePrequeue, EventStats, ListEvents, GetRequest", operation: "GetItem", key: "EVENT#<eventId>#RETURNS / RETURNS, strongly consistent (GetRequest, the place of a pre-queue's waitlisted entry: eventually)", read: "GetItem RETURNS"},
	{name: "waitlist", method: "SweepHolds", operation: "Query GSI2", key: "EVENT#<eventId>, WAITLISTED in queue order, each shard merged", read: "Query GSI2 EVENT"},
}

// keyOf is the key a row writes, as the table states it.
func keyOf(r *row) string {
	if r == &createEventRow {
		return "EVENT#<eventId> / CONFIG, and CAPACITY (+ HOLD_EVENTS / EVENT#<eventId>, + DRAW with a pre-queue) or DRAW, one TransactWriteItems"
	}
	return map[entity.Type]string{
		entity.Request:     "REQ#<requestId> / META",
		entity.Idempotency: "IDEMP#<eventId>#<userId> / LOCK",
		entity.Capacity:    "EVENT#<eventId> / CAPACITY",
		entity.Config:      "EVENT#<eventId> / CONFIG",
		entity.Draw:        "EVENT#<eventId> / DRAW",
		entity.Admission:   "EVENT#<eventId> / ADMISSION",
		entity.StatusLog:   "REQ#<requestId> / LOG#<occurredAt>#<suffix>",
		entity.Hold:        "EVENT#<eventId>#HOLDS#<shard> / EXP#<expiresAt>#REQ#<requestId>",
		entity.Returns:     "EVENT#<eventId>#RETURNS / RETURNS",
		entity.Audit:       "EVENT#<eventId> / AUDIT#<at>#<suffix>",
		entity.Operation:   "EVENT#<eventId> / OP#<action>#<idempotencyKey>",
		entity.Progress:    "EVENT#<eventId>#PROGRESS#<p> / T#<second>",
		entity.Waitlist:    "EVENT#<eventId>#PROGRESS#<p> / W#<minute>",
		entity.Entries:     "EVENT#<eventId>#ENTRIES#<n> / SET#<entriesHash>",
		entity.EventEntry:  "EVENTS / CAT#<createdAt>#EVENT#<eventId>",
		entity.HoldEvent:   "HOLD_EVENTS / EVENT#<eventId>",
	}[r.item]
}

// writeRows reads the table's writes off the row declarations.
func writeRows() []docRow {
	var out []docRow
	for _, r := range declaredRows() {
		e, err := r.build(rowplan.DocValues{}, "")
		if err != nil {
			panic(err)
		}
		out = append(out, docRow{
			name: r.name, method: r.method, operation: string(r.op), key: keyOf(r),
			condition: rowplan.Describe(e, e.Condition()), update: rowplan.Describe(e, e.Update()),
		})
	}
	return out
}

const (
	docBegin = "//\t\tWRITES"
	docWidth = 92 // wrap if and set lines here
)

// renderTable writes the two tables of doc.go's access-pattern section.
func renderTable() string {
	var b strings.Builder
	writes := writeRows()
	width := 0 // of the method column: its longest entry up to 40 (a longer one runs past it)
	for _, r := range append(slices.Clone(writes), readRows...) {
		if len(r.method) <= 40 {
			width = max(width, len(r.method))
		}
	}
	line := func(format string, args ...any) { fmt.Fprintf(&b, "//\t"+format+"\n", args...) }
	entry := func(r docRow) {
		// A method list longer than its column goes on under the row, on "by" lines.
		first, rest := r.method, ""
		for len(first) > width {
			i := strings.LastIndex(first[:width], ", ")
			if i < 0 {
				break
			}
			first, rest = r.method[:i+1], strings.TrimSpace(r.method[i+1:])
		}
		line("%-30s %-*s %-14s %s", r.name, width, first, r.operation, r.key)
		for rest != "" {
			chunk := rest
			if len(chunk) > docWidth-9 {
				if i := strings.LastIndex(chunk[:docWidth-9], ", "); i > 0 {
					chunk = rest[:i+1]
				}
			}
			line("    by   %s", chunk)
			rest = strings.TrimSpace(rest[len(chunk):])
		}
	}
	head := func(title string) {
		line("\t%s", title)
		entry(docRow{name: "row", method: "method", operation: "operation", key: "key"})
	}
	wrap := func(label, text string) {
		if text == "" {
			return
		}
		prefix := fmt.Sprintf("    %-4s ", label)
		cur := prefix
		for i, part := range splitTopLevel(text) {
			if i > 0 && len(cur)+len(part) > docWidth {
				line("%s", strings.TrimRight(cur, " "))
				cur = strings.Repeat(" ", len(prefix)) + strings.TrimLeft(part, " ")
				continue
			}
			cur += part
		}
		line("%s", cur)
	}
	head("WRITES")
	for _, r := range writes {
		entry(r)
		wrap("if", r.condition)
		wrap("set", r.update)
	}
	head("READS")
	for _, r := range readRows {
		entry(r)
	}
	return b.String()
}

// splitTopLevel cuts an expression where a table line may wrap: after a comma, and
// before AND, OR or an update's clause (SET, ADD, REMOVE, DELETE), outside
// parentheses.
func splitTopLevel(text string) []string {
	var parts []string
	depth, from := 0, 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '(':
			depth++
		case ')':
			depth--
		}
		if depth != 0 {
			continue
		}
		switch {
		case strings.HasPrefix(text[i:], ", "):
			parts, from = append(parts, text[from:i+2]), i+2
		case strings.HasPrefix(text[i:], " AND "), strings.HasPrefix(text[i:], " OR "),
			strings.HasPrefix(text[i:], " SET "), strings.HasPrefix(text[i:], " ADD "),
			strings.HasPrefix(text[i:], " REMOVE "), strings.HasPrefix(text[i:], " DELETE "):
			parts, from = append(parts, text[from:i]), i
		}
	}
	return append(parts, text[from:])
}

// docTableSpan returns where the tables sit in doc.go's text.
func docTableSpan(t *testing.T, doc string) (int, int) {
	start := strings.Index(doc, docBegin)
	require.GreaterOrEqual(t, start, 0, "doc.go has no access-pattern table (a line %q)", docBegin)
	end := strings.Index(doc[start:], "\n//\n")
	require.Greater(t, end, 0, "the access-pattern table of doc.go ends with an empty comment line")
	return start, start + end + 1
}

var docRowLine = regexp.MustCompile(`^//\t(\S.*?)\s{2,}(\S+(?:, \S+)*,?)\s+(UpdateItem|PutItem|DeleteItem|ConditionCheck|GetItem|Query(?: GSI[12])?)\s+(.+)$`)

// parseTable reads the rows of doc.go's tables back.
func parseTable(text string) []docRow {
	var out []docRow
	var last *string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		body := strings.TrimPrefix(l, "//\t")
		switch {
		case strings.HasPrefix(body, "    if "):
			out[len(out)-1].condition = strings.TrimSpace(body[len("    if "):])
			last = &out[len(out)-1].condition
		case strings.HasPrefix(body, "    set "):
			out[len(out)-1].update = strings.TrimSpace(body[len("    set "):])
			last = &out[len(out)-1].update
		case strings.HasPrefix(body, "    by   "):
			out[len(out)-1].method += " " + strings.TrimSpace(body[len("    by   "):])
		case strings.HasPrefix(body, "         "):
			*last += " " + strings.TrimSpace(body)
		default:
			m := docRowLine.FindStringSubmatch(l)
			if m == nil || m[1] == "row" {
				continue
			}
			out = append(out, docRow{name: strings.TrimSpace(m[1]), method: m[2], operation: m[3], key: m[4]})
			last = nil
		}
	}
	return out
}

func TestAccessPatternTable(t *testing.T) {
	raw, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	doc := string(raw)
	start, end := docTableSpan(t, doc)
	want := renderTable()
	if os.Getenv("UPDATE_DOC") != "" {
		require.NoError(t, os.WriteFile("doc.go", []byte(doc[:start]+want+doc[end:]), 0o644))
		return
	}

	placeholder := regexp.MustCompile(`[#:][0-9]+`)
	assert.False(t, placeholder.MatchString(want), "a value of the access-pattern table is a bare placeholder (describe gives no literal for its kind):\n%s", placeholder.FindAllString(want, -1))

	stated := parseTable(doc[start:end])
	declared := append(writeRows(), readRows...)
	byName := map[string]docRow{}
	for _, r := range stated {
		byName[r.name] = r
	}
	for _, r := range declared {
		got, ok := byName[r.name]
		if !assert.True(t, ok, "row %q is declared but missing from doc.go's table", r.name) {
			continue
		}
		r.read = "" // the signature a test observes: not in the table
		assert.Equal(t, r, got, "row %q: doc.go states one thing, the code builds another (UPDATE_DOC=1 go test -run TestAccessPatternTable rewrites the table)", r.name)
	}
	assert.Len(t, stated, len(declared), "doc.go's table has rows the code does not declare")
	if !t.Failed() {
		assert.True(t, want == doc[start:end], "doc.go's table is laid out differently from what the declarations give (UPDATE_DOC=1 rewrites it)")
	}

	for _, r := range stated {
		for _, m := range strings.Split(r.method, ", ") {
			assert.True(t, hasMethod(m), "row %q names %s, which the package does not have", r.name, m)
		}
	}
}

// hasMethod reports whether name is a method of Client, or Type.Member of a type
// users see (Rows.ClaimSeat, Processor.ProcessOne, Options.StatusLog).
func hasMethod(name string) bool {
	types := map[string]reflect.Type{
		"Client": reflect.TypeFor[*Client](), "Rows": reflect.TypeFor[*Rows](), "Processor": reflect.TypeFor[*Processor](),
		"Options": reflect.TypeFor[Options](),
	}
	typ, member := "Client", name
	if before, after, ok := strings.Cut(name, "."); ok {
		typ, member = before, after
	}
	t, ok := types[typ]
	if !ok {
		return false
	}
	if _, ok := t.MethodByName(member); ok {
		return true
	}
	if t.Kind() == reflect.Struct {
		_, ok := t.FieldByName(member)
		return ok
	}
	return false
}

// TestRowsFillEveryParam: a write that leaves out a param of its row is an error,
// not a malformed write; a row without params needs no args.
func TestRowsFillEveryParam(t *testing.T) {
	c := &Client{opts: Options{TableName: "t"}}
	for _, r := range declaredRows() {
		e, err := r.build(rowplan.DocValues{}, "")
		require.NoError(t, err, r.name)
		takesParams := slices.ContainsFunc(slices.Collect(maps.Values(e.Values())), func(v types.AttributeValue) bool {
			s, ok := v.(*types.AttributeValueMemberS)
			return ok && strings.HasPrefix(s.Value, ":")
		})
		_, err = inputOf(c, write{row: r}, "")
		if !takesParams {
			assert.NoError(t, err, r.name)
			continue
		}
		assert.ErrorContains(t, err, "no value for", r.name)
	}
}

// TestRowsBuild: every row builds, leaving any status of from and each alone, and
// a row has an update exactly when it is an UpdateItem.
func TestRowsBuild(t *testing.T) {
	for _, r := range declaredRows() {
		starts := []Status{""}
		for _, l := range r.from {
			starts = append(starts, l.status)
		}
		for _, start := range starts {
			e, err := r.build(rowplan.DocValues{}, start)
			require.NoError(t, err, "%s from %q", r.name, start)
			assert.Equal(t, r.op == opUpdate, e.Update() != nil, "%s: an update row must set something, and only an update row may", r.name)
			if start != "" && len(r.from) > 1 {
				assert.Contains(t, rowplan.Describe(e, e.Condition()), string(start), r.name)
			}
		}
	}
}

// TestCanTransitionReadsTheRows: CanTransition is exactly the status writes declared.
func TestCanTransitionReadsTheRows(t *testing.T) {
	statuses := []Status{StatusReceived, StatusQueued, StatusProcessing, StatusSucceeded, StatusRejected, StatusFailedFinal}
	for _, from := range statuses {
		for _, to := range statuses {
			declared := slices.ContainsFunc(declaredRows(), func(r *row) bool { return r.to == to && r.leaves(from) })
			assert.Equal(t, declared, CanTransition(from, to), "%s → %s", from, to)
		}
	}
}

// TestAttributeNamesMatchTags: every attr constant names an attribute of an item,
// as its struct's dynamodbav tag spells it, and sits in the file of an item that has
// it.
func TestAttributeNamesMatchTags(t *testing.T) {
	items := []any{Request{}, storedRequest{}, IdempotencyLock{}, EventCapacity{}, capacityItem{}, EventSettings{}, Event{}, eventItem{}, DrawRecord{}, drawItem{}, admissionItem{}, StatusLog{}, statusLogItem{}, holdRecord{}, seatReturns{}, AuditEntry{}, auditItem{}, eventListing{}, Key{}, IndexKeys{}}
	tags := map[string][]string{} // attribute → the item types that have it
	for _, it := range items {
		typ := reflect.TypeOf(it)
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("dynamodbav"), ",")
			tags[name] = append(tags[name], typ.Name())
		}
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	require.NoError(t, err)
	found := 0
	for _, f := range pkgs["asyncevent"].Files {
		declared := map[string]bool{} // the types declared in this file
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				declared[ts.Name.Name] = true
			}
			return true
		})
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "attr") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					value, _ := strconv.Unquote(lit.Value)
					found++
					owners := tags[value]
					if !assert.NotEmpty(t, owners, "%s = %q is no item's attribute", id.Name, value) {
						continue
					}
					assert.True(t, slices.ContainsFunc(owners, func(o string) bool { return declared[o] }),
						"%s = %q sits in %s, away from its item (%v)", id.Name, value, fset.File(f.Pos()).Name(), owners)
				}
			}
		}
	}
	assert.Greater(t, found, 20, "the attr constants were found")
}

// BenchmarkRowInput is what turning a write into its SDK input costs: the row's
// plan is built once, each write binds its own values.
func BenchmarkRowInput(b *testing.B) {
	c := &Client{opts: Options{TableName: "t"}}
	key := Key{PK: "REQ#01a20795-50b4-778f-baec-0a750608711f", SK: "META"}
	writes := map[string]write{
		"start processing": {row: &startProcessingRow, key: key,
			args: args{pNow: EpochMillis(1_795_421_039_191), pLeaseOwner: "worker-1/0a1b2c3d", pLeaseExpiresAt: EpochMillis(1_795_421_069_191), pSeatShard: 3, pSeatEpoch: 1}},
		"first-come capacity": {row: &claimSeatRow, key: Key{PK: "EVENT#spring-sale#CAPACITY#3", SK: "CAPACITY"},
			args: args{pNow: EpochMillis(1_795_421_039_191), pSeatToken: "tok", pSeatTokens: setOf[string]{"tok"}, pFenceToken: "fence"}},
	}
	for name, w := range writes {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := inputOf(c, w, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// argValues give each param its value in a write's args, the way a row's expression
// was built for every write before plans.
type argValues args

func (a argValues) Arg(p param) any                       { return a[p] }
func (a argValues) Value(p param) expression.ValueBuilder { return expression.Value(a[p]) }

// A row's plan, bound with a write's args, is the expression built for that write
// with those args: the same text, names and values, for every row leaving each of
// its statuses, with values of each kind a row binds.
func TestPlansBindTheBuiltExpression(t *testing.T) {
	kinds := []func(p param) any{
		func(p param) any { return "v-" + string(p) },
		func(p param) any { return EpochMillis(1_795_421_039_191) },
		func(p param) any { return 7 },
		func(p param) any { return int64(-3) },
		func(p param) any { return true },
		func(p param) any { return StatusQueued },
		func(p param) any { return setOf[string]{"a", "b"} },
		func(p param) any { return setOf[int]{1, 2} },
		func(p param) any { return setOf[string](nil) },
		func(p param) any { return "" },
		func(p param) any { return nil },
		func(p param) any { return uint(9) },
		func(p param) any { return 0.5 },
		func(p param) any { millis := EpochMillis(3); return &millis },
	}
	for _, r := range declaredRows() {
		starts := []Status{""}
		for _, l := range r.from {
			starts = append(starts, l.status)
		}
		for _, start := range starts {
			p, err := r.planOf(start)
			require.NoError(t, err, r.name)
			for k, kind := range kinds {
				a := args{}
				for _, pp := range p.Params() {
					a[pp] = kind(pp)
				}
				want, err := r.build(argValues(a), start)
				require.NoError(t, err, r.name)
				values, err := rowplan.Bind(p, a)
				require.NoError(t, err, r.name)
				assert.Equal(t, want.Condition(), p.Condition, "%s leaving %q: condition", r.name, start)
				assert.Equal(t, want.Update(), p.Update, "%s leaving %q: update", r.name, start)
				assert.Equal(t, want.Names(), p.Names, "%s leaving %q: names", r.name, start)
				assert.Equal(t, want.Values(), values, "%s leaving %q: values of kind %d", r.name, start, k)
			}
			if len(p.Params()) > 0 {
				_, err := rowplan.Bind(p, args{})
				assert.ErrorContains(t, err, "no value for", r.name)
			}
		}
	}
}

type (
	namedCount int
	namedText  string
)

// marshalValue encodes every value as attributevalue.Marshal does, its fast paths
// included: strings (empty, named), integers of each kind and sign, booleans, and
// what it leaves to the SDK (floats, unsigned, pointers, nil, sets, slices), nil
// Marshalers among them (NULL, as the SDK has it, not the Marshaler's answer).
func TestMarshalValueIsTheSDKs(t *testing.T) {
	s, zero := "x", 0
	millis := EpochMillis(5)
	for _, v := range []any{
		"", "a#b", StatusQueued, EpochMillis(0), EpochMillis(-5), EpochMillis(1_795_421_039_191),
		namedCount(4), namedText(""), namedText("y"), &millis, (*EpochMillis)(nil),
		0, -1, int8(-3), int16(7), int32(1 << 30), int64(-1 << 40), uint(3), uint8(5), uint64(1 << 63),
		true, false, 1.5, float32(0.25), &s, &zero, (*string)(nil), nil,
		setOf[string]{"a"}, setOf[int]{1, 2}, setOf[string]{}, setOf[string](nil), setOf[int](nil),
		[]string{"a", "b"}, []string{}, []int(nil), []byte("b"), entity.Request,
	} {
		want, wantErr := attributevalue.Marshal(v)
		got, err := rowplan.MarshalValue(v)
		if wantErr != nil {
			assert.Error(t, err, "%T %v", v, v)
			continue
		}
		require.NoError(t, err, "%T %v", v, v)
		assert.Equal(t, want, got, "%T %v", v, v)
	}
}

// Each input has maps and values of its own: a caller's DynamoDB wrapper that edits an
// input (adds a name, rewrites a value in place) changes no later write of the row, and
// two wrappers doing so at once do not race (go test -race).
func TestInputsShareNothing(t *testing.T) {
	c := &Client{opts: Options{TableName: "tab"}}
	w := write{row: &startProcessingRow, key: Key{PK: "REQ#x", SK: "META"},
		args: args{pNow: EpochMillis(1), pLeaseOwner: "o", pLeaseExpiresAt: EpochMillis(2), pSeatShard: 3, pSeatEpoch: 1}}
	want, err := inputOf(c, w, "")
	require.NoError(t, err)
	edit := func() {
		in, err := inputOf(c, w, "")
		require.NoError(t, err)
		in.Update.ExpressionAttributeNames["#wrapper"] = "tenant"
		for _, v := range in.Update.ExpressionAttributeValues {
			switch v := v.(type) {
			case *types.AttributeValueMemberS:
				v.Value = "edited"
			case *types.AttributeValueMemberNS:
				v.Value[0] = "-1"
			}
		}
	}
	var g sync.WaitGroup
	for range 8 {
		g.Go(edit)
	}
	g.Wait()
	got, err := inputOf(c, w, "")
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.NotContains(t, got.Update.ExpressionAttributeNames, "#wrapper")
	for k, v := range got.Update.ExpressionAttributeValues {
		assert.NotEqual(t, &types.AttributeValueMemberS{Value: "edited"}, v, k)
	}
}

// Each row is one method whose doc comment names the row, the operation, the key and
// the condition. The access-pattern table (read off the declarations)
// assigns rows to methods; every row a method of Rows writes must be named, in
// quotes, in that method's doc comment.
func TestRowMethodDocsNameEveryRowTheyWrite(t *testing.T) {
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
	require.NotEmpty(t, rowsOf["Rows.ClaimSeat"])

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
				if id, ok := star.X.(*ast.Ident); ok && id.Name == "Rows" {
					docs["Rows."+fn.Name.Name] = strings.Join(strings.Fields(fn.Doc.Text()), " ")
				}
			}
		}
	}
	for _, method := range []string{"Participate", "MarkQueued", "MarkEnqueueFailed", "StartProcessing", "ClaimSeat",
		"MarkCapacityRejected", "RejectSoldOut", "MarkFailed", "MarkClosed"} {
		method = "Rows." + method
		require.Contains(t, docs, method, "Rows has no method %s", method)
		for _, row := range rowsOf[method] {
			assert.True(t, strings.Contains(docs[method], `"`+row+`"`), "%s writes the row %q; its doc comment does not name it", method, row)
		}
	}
}

// inputOf is w as its SDK input, the way do sends it: rowexec.Input of its write.
func inputOf(c *Client, w write, start Status) (types.TransactWriteItem, error) {
	x, err := c.exec(w, start)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return rowexec.Input(c.opts.TableName, x), nil
}

// Every row is declared in its item's file, beside the item (STYLE: never in a file
// grouped by who calls it): a reader looking for what writes an item reads one file.
func TestRowsBesideTheirItems(t *testing.T) {
	home := map[string]string{
		"Request": "request.go", "Config": "event.go", "Capacity": "capacity.go", "Returns": "seat_pool.go",
		"Draw": "lottery.go", "Hold": "hold.go", "HoldEvent": "hold.go", "Idempotency": "idempotency.go",
		"Admission": "ranked.go", "Audit": "event_control.go", "EventEntry": "event_list.go", "Entries": "entries.go",
		"Operation": "operation.go", "Progress": "progress.go", "StatusLog": "statuslog.go", "Waitlist": "waitlist_place.go",
	}
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	declared := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || fmt.Sprint(lit.Type) != "row" {
				return true
			}
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok || fmt.Sprint(kv.Key) != "item" {
					continue
				}
				sel, ok := kv.Value.(*ast.SelectorExpr)
				require.True(t, ok, "%s: a row's item is entity.<Type>", fset.Position(kv.Pos()))
				want, known := home[sel.Sel.Name]
				require.True(t, known, "%s: no home file for item %s", fset.Position(kv.Pos()), sel.Sel.Name)
				assert.Equal(t, want, name, "%s: a %s row", fset.Position(kv.Pos()), sel.Sel.Name)
				declared++
			}
			return true
		})
	}
	assert.GreaterOrEqual(t, declared, len(declaredRows()), "every row of the table was found")
}
