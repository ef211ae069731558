package rowplan

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A Plan is a row's expression for one start status, built once (New): its text and
// names as built, the values its constants take, and the param each other value
// placeholder takes. A write binds its args into the plan's values (Bind), so a call
// pays for its own values, not for building the row's expression again.
type Plan struct {
	Condition, Update *string
	Names             map[string]string // shared by every write: copy before changing

	row       string                          // the row's name, for errors
	constants map[string]types.AttributeValue // copied into each write's values
	params    []planParam
}

// planParam is a value placeholder of a plan and the param it takes.
type planParam struct {
	placeholder string
	param       Param
}

// paramMark begins the value planValues gives each param, which no write's value is.
const paramMark = "\x00asyncevent-param\x00"

// planValues give each param a value that names it, so that New finds which
// placeholder of the built expression takes which param.
type planValues struct{}

func (planValues) Arg(p Param) any { return paramMark + string(p) }
func (planValues) Value(p Param) expression.ValueBuilder {
	return expression.Value(planValues{}.Arg(p))
}

// New builds r's plan leaving start ("" for any status of From).
func New(r *Row, start string) (*Plan, error) {
	e, err := r.Build(planValues{}, start)
	if err != nil {
		return nil, err
	}
	p := &Plan{Condition: e.Condition(), Update: e.Update(), Names: e.Names(), row: r.Name, constants: map[string]types.AttributeValue{}}
	for placeholder, v := range e.Values() {
		if s, ok := v.(*types.AttributeValueMemberS); ok && strings.HasPrefix(s.Value, paramMark) {
			p.params = append(p.params, planParam{placeholder, Param(strings.TrimPrefix(s.Value, paramMark))})
			continue
		}
		p.constants[placeholder] = v
	}
	return p, nil
}

// Bind returns the plan's values with a's: each param's value as the expression
// package would marshal it. A param a does not give is an error naming it.
func Bind(p *Plan, a Args) (map[string]types.AttributeValue, error) {
	if len(p.constants)+len(p.params) == 0 {
		return nil, nil
	}
	values := make(map[string]types.AttributeValue, len(p.constants)+len(p.params))
	for placeholder, v := range p.constants {
		values[placeholder] = cloneValue(v)
	}
	for _, pp := range p.params {
		v, ok := a[pp.param]
		if !ok {
			return nil, fmt.Errorf("asyncevent: row %q: no value for %s", p.row, pp.param)
		}
		av, err := MarshalValue(v)
		if err != nil {
			return nil, fmt.Errorf("asyncevent: row %q: %s: %w", p.row, pp.param, err)
		}
		values[pp.placeholder] = av
	}
	return values, nil
}

// cloneValue is a copy of v that shares nothing with it: an input is its caller's to
// change (a user's DynamoDB wrapper may edit one), so no two inputs share a value.
func cloneValue(v types.AttributeValue) types.AttributeValue {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: x.Value}
	case *types.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: x.Value}
	case *types.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: x.Value}
	case *types.AttributeValueMemberNULL:
		return &types.AttributeValueMemberNULL{Value: x.Value}
	case *types.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: slices.Clone(x.Value)}
	case *types.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: slices.Clone(x.Value)}
	case *types.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: slices.Clone(x.Value)}
	case *types.AttributeValueMemberBS:
		bs := make([][]byte, len(x.Value))
		for i, b := range x.Value {
			bs[i] = slices.Clone(b)
		}
		return &types.AttributeValueMemberBS{Value: bs}
	case *types.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(x.Value))
		for i, e := range x.Value {
			l[i] = cloneValue(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		m := make(map[string]types.AttributeValue, len(x.Value))
		for k, e := range x.Value {
			m[k] = cloneValue(e)
		}
		return &types.AttributeValueMemberM{Value: m}
	}
	return v
}

// MarshalValue is attributevalue.Marshal of v, without its reflection for the values
// rows bind most: strings, integers and booleans, of any named type. A nil slice, map
// or pointer is NULL, as the SDK encodes it, before any Marshaler of its type is
// asked.
func MarshalValue(v any) (types.AttributeValue, error) {
	switch x := v.(type) {
	case attributevalue.Marshaler:
		switch rv := reflect.ValueOf(v); rv.Kind() {
		case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface:
			if rv.IsNil() {
				return &types.AttributeValueMemberNULL{Value: true}, nil
			}
		}
		return x.MarshalDynamoDBAttributeValue()
	case string:
		return &types.AttributeValueMemberS{Value: x}, nil
	case int:
		return &types.AttributeValueMemberN{Value: strconv.Itoa(x)}, nil
	case int64:
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(x, 10)}, nil
	case bool:
		return &types.AttributeValueMemberBOOL{Value: x}, nil
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.String:
		return &types.AttributeValueMemberS{Value: rv.String()}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(rv.Int(), 10)}, nil
	}
	return attributevalue.Marshal(v)
}

// SetOf marshals to a DynamoDB set: a number set (NS) of ints, a string set (SS) of
// strings.
type SetOf[T int | string] []T

// MarshalDynamoDBAttributeValue implements attributevalue.Marshaler.
func (s SetOf[T]) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) {
	elems := make([]string, len(s))
	for i, v := range s {
		elems[i] = fmt.Sprint(v)
	}
	if _, numbers := any(s).(SetOf[int]); numbers {
		return &types.AttributeValueMemberNS{Value: elems}, nil
	}
	return &types.AttributeValueMemberSS{Value: elems}, nil
}

// Params are the params the plan takes, one for each value placeholder that is not a
// constant.
func (p *Plan) Params() []Param {
	ps := make([]Param, len(p.params))
	for i, pp := range p.params {
		ps[i] = pp.param
	}
	return ps
}
