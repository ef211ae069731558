// Package rowplan is the engine behind the rows of the access-pattern table: it turns
// a row's declaration (the statuses it leaves, its guard, the status it enters, its
// actions) into a DynamoDB condition and update expression, builds that expression
// once per row and start status (a Plan), and binds each call's values into it.
//
// The rows themselves are declared in the asyncevent package, beside their items; a
// row's conditions and actions name the values that change from call to call as
// params, and a write carries their values (Args).
package rowplan

import (
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
)

// Param names a value that a row's conditions and actions take at each call.
type Param string

// Args are a write's values of its row's params, each of the Go type its attribute
// holds.
type Args map[Param]any

// Values gives a row's conditions and actions the values of their params.
type Values interface {
	// Arg is p's value, as the expression package takes a value (Contains).
	Arg(p Param) any
	// Value is p's value as an operand.
	Value(p Param) expression.ValueBuilder
}

// A Cond is a condition of a row, which may take params' values from v.
type Cond func(v Values) expression.ConditionBuilder

// Fixed is a Cond that takes no param.
func Fixed(c expression.ConditionBuilder) Cond {
	return func(Values) expression.ConditionBuilder { return c }
}

// Compare is the Cond that op holds against p's value, as in
// Compare(expression.Name("endsAt").LessThan, pEndsAt).
func Compare(op func(expression.OperandBuilder) expression.ConditionBuilder, p Param) Cond {
	return func(v Values) expression.ConditionBuilder { return op(v.Value(p)) }
}

// All is the Cond that each of cs holds, read left to right: All(a, b, c) is
// ((a AND b) AND c).
func All(cs ...Cond) Cond { return fold(expression.ConditionBuilder.And, cs) }

// Either is the Cond that one of cs holds, read left to right like All.
func Either(cs ...Cond) Cond { return fold(expression.ConditionBuilder.Or, cs) }

// fold joins cs left to right with join.
func fold(join func(a, b expression.ConditionBuilder, more ...expression.ConditionBuilder) expression.ConditionBuilder, cs []Cond) Cond {
	return func(v Values) expression.ConditionBuilder {
		c := cs[0](v)
		for _, next := range cs[1:] {
			c = join(c, next(v))
		}
		return c
	}
}

// Not is the Cond that c does not hold.
func Not(c Cond) Cond {
	return func(v Values) expression.ConditionBuilder { return expression.Not(c(v)) }
}

// An Action is one action of an update on Attr, with a constant or a param's value.
type Action struct {
	Attr      string
	Constant  any   // a value, or an operand of constants
	Param     Param // when not "", the value; Constant is unused
	IfMissing bool  // a SET only where the item has no Attr yet
}

// SetTo sets attr to v: a constant, a Param's value at each call, or an operand
// (expression.Name(attr).Minus(expression.Value(1))).
func SetTo(attr string, v any) Action {
	if p, ok := v.(Param); ok {
		return Action{Attr: attr, Param: p}
	}
	return Action{Attr: attr, Constant: v}
}

// SetIfMissing sets attr to v where the item has no attr yet: a constant, or a
// Param's value at each call.
func SetIfMissing(attr string, v any) Action {
	a := SetTo(attr, v)
	a.IfMissing = true
	return a
}

// value is the action's value with v's params.
func (a Action) value(v Values) expression.ValueBuilder {
	if a.Param != "" {
		return v.Value(a.Param)
	}
	return expression.Value(a.Constant)
}

// operand is a SET action's operand with v's params.
func (a Action) operand(v Values) expression.OperandBuilder {
	if o, ok := a.Constant.(expression.OperandBuilder); ok {
		return o
	}
	if a.IfMissing {
		return expression.IfNotExists(expression.Name(a.Attr), a.value(v))
	}
	return a.value(v)
}

// Leave is a status a row may leave, with what must hold besides when it does.
type Leave struct {
	Status string
	When   Cond
}

// A Row is the expression side of a row's declaration: what its condition and its
// update are made of.
type Row struct {
	Name       string // as in the access-pattern table; errors name it
	StatusAttr string // the attribute that holds the status, for a status write

	// A status write leaves one of From (the likeliest first) for To. A row that
	// writes no status has no From, and Cond is its whole condition.
	From  []Leave
	To    string
	Guard Cond // holds too, whatever the status left
	Cond  Cond // the condition of a row that writes no status

	Sets    []Action // the update's SET actions besides status, in order
	Adds    []Action // the update's ADD actions: a number, or elements into a set
	Deletes []Action // the update's DELETE actions: elements out of a set
	Removes []string // the update's REMOVE actions: attributes it drops
}

// Leaves reports whether r may start from status s.
func (r *Row) Leaves(s string) bool {
	return slices.ContainsFunc(r.From, func(l Leave) bool { return l.Status == s })
}

// Build is the row's expression for one write: its condition leaving start ("" for
// any status of From), and its update, with v's values. A row without condition or
// update (a delete whatever the item holds) has an empty one.
func (r *Row) Build(v Values, start string) (expression.Expression, error) {
	c := r.condition(v, start)
	u, updates := r.update(v)
	if c == nil && !updates {
		return expression.Expression{}, nil
	}
	b := expression.NewBuilder()
	if c != nil {
		b = b.WithCondition(*c)
	}
	if updates {
		b = b.WithUpdate(u)
	}
	e, err := b.Build()
	if err != nil {
		return e, fmt.Errorf("asyncevent: row %q: %w", r.Name, err)
	}
	return e, nil
}

// condition is the row's condition leaving start, or any status of From when start
// is "" or not one of them; nil when the row has none.
func (r *Row) condition(v Values, start string) *expression.ConditionBuilder {
	if len(r.From) == 0 {
		if r.Cond == nil {
			return nil
		}
		c := r.Cond(v)
		return &c
	}
	if !r.Leaves(start) {
		start = ""
	}
	var cond expression.ConditionBuilder
	first := true
	for _, l := range r.From {
		if start != "" && l.Status != start {
			continue
		}
		c := expression.Name(r.StatusAttr).Equal(expression.Value(l.Status))
		if l.When != nil {
			c = c.And(l.When(v))
		}
		if first {
			cond, first = c, false
		} else {
			cond = cond.Or(c)
		}
	}
	if r.Guard != nil {
		cond = cond.And(r.Guard(v))
	}
	return &cond
}

// update is the row's update: its status, then its actions in order; false when it
// writes nothing.
func (r *Row) update(v Values) (expression.UpdateBuilder, bool) {
	var u expression.UpdateBuilder
	if r.To == "" && len(r.Sets)+len(r.Adds)+len(r.Deletes)+len(r.Removes) == 0 {
		return u, false
	}
	if r.To != "" {
		u = u.Set(expression.Name(r.StatusAttr), expression.Value(r.To))
	}
	for _, s := range r.Sets {
		u = u.Set(expression.Name(s.Attr), s.operand(v))
	}
	for _, a := range r.Adds {
		u = u.Add(expression.Name(a.Attr), a.value(v))
	}
	for _, d := range r.Deletes {
		u = u.Delete(expression.Name(d.Attr), d.value(v))
	}
	for _, name := range r.Removes {
		u = u.Remove(expression.Name(name))
	}
	return u, true
}
