package main

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/asyncevent/asyncevent"
)

// newTable returns a tabwriter for a human table on w; Flush it.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// field is one attribute of an item, named as on the table.
type field struct {
	name  string
	value any
}

// fieldsOf lists the non-zero attributes of one of the library's item structs
// (Request, Event, …) in the struct's order, named by their dynamodbav tags,
// so that the CLI shows the names the table stores. An embedded struct's fields
// (Event's EventSettings) are listed in its place, as DynamoDB stores them.
func fieldsOf(v any) []field {
	rv := reflect.Indirect(reflect.ValueOf(v))
	var fs []field
	for i := range rv.NumField() {
		sf := rv.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("dynamodbav"), ",")
		if name == "-" {
			continue
		}
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			fs = append(fs, fieldsOf(rv.Field(i).Interface())...)
			continue
		}
		if name == "" {
			name = sf.Name
		}
		fv := rv.Field(i)
		if fv.IsZero() {
			continue
		}
		fs = append(fs, field{name: name, value: fv.Interface()})
	}
	return fs
}

// itemJSON is an item as a JSON object keyed by its attribute names; times stay epoch
// milliseconds (and ttl epoch seconds), as stored.
func itemJSON(v any) map[string]any {
	return fieldsJSON(fieldsOf(v))
}

// fieldsJSON is fields as a JSON object keyed by their names.
func fieldsJSON(fs []field) map[string]any {
	m := map[string]any{}
	for _, f := range fs {
		m[f.name] = f.value
	}
	return m
}

// printItem prints an item as a two-column table: attribute and value, times also in
// RFC 3339.
func printItem(w io.Writer, v any) error {
	return printFields(w, fieldsOf(v))
}

// printFields prints fields as printItem does.
func printFields(w io.Writer, fs []field) error {
	tw := newTable(w)
	for _, f := range fs {
		fmt.Fprintf(tw, "%s\t%s\n", f.name, formatValue(f.name, f.value))
	}
	return tw.Flush()
}

func formatValue(name string, v any) string {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		v = rv.Elem().Interface() // seatShard: the shard, not its address
	}
	switch x := v.(type) {
	case asyncevent.EpochMillis:
		return fmt.Sprintf("%s (%d)", formatMillis(x), int64(x))
	case int64:
		if name == "ttl" {
			return fmt.Sprintf("%s (%d)", time.Unix(x, 0).UTC().Format(time.RFC3339), x)
		}
		return strconv.FormatInt(x, 10)
	}
	return fmt.Sprint(v)
}

// formatMillis is an epoch-millisecond time in RFC 3339 with milliseconds, UTC; "-"
// for zero.
func formatMillis(m asyncevent.EpochMillis) string {
	if m == 0 {
		return "-"
	}
	return m.Time().UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
