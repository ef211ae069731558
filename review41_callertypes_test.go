package asyncevent_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/asyncevent/asyncevent"
)

// Review 41: STYLE "A caller never sees bookkeeping fields"; doc.go's "What a service
// calls" lists GetCapacity, GetDraw, Draw, ListStatusLogs, ListAudit and HoldEvents
// among a service's calls. What they return should carry no item bookkeeping: the
// entity type, the TTL, the seat tokens and fences, the pool version.
func TestReview41ServiceCallsReturnNoBookkeeping(t *testing.T) {
	bookkeeping := map[string]bool{"EntityType": true, "TTL": true, "Holders": true, "Void": true, "PoolVersion": true,
		"EmptyShards": true, "LocksKeptUntil": true, "LeaseOwner": true, "LeaseExpiresAt": true, "SeatShard": true, "SeatEpoch": true}
	c := reflect.TypeOf(&asyncevent.Client{})
	for _, name := range []string{"GetRequest", "GetEvent", "ListEvents", "ListUserRequests", "ListEventRequests",
		"GetCapacity", "GetDraw", "Draw", "ListStatusLogs", "ListAudit", "HoldEvents", "EventStats", "Confirm", "Release",
		"PauseEvent", "CreateEvent", "Submit", "LookupParticipation"} {
		m, ok := c.MethodByName(name)
		if !assert.True(t, ok, name) {
			continue
		}
		seen := map[reflect.Type]bool{}
		var walk func(path string, ty reflect.Type)
		walk = func(path string, ty reflect.Type) {
			for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
				ty = ty.Elem()
			}
			if ty.Kind() != reflect.Struct || seen[ty] || ty.PkgPath() != "github.com/asyncevent/asyncevent" {
				return
			}
			seen[ty] = true
			for i := 0; i < ty.NumField(); i++ {
				f := ty.Field(i)
				if !f.IsExported() {
					continue
				}
				if bookkeeping[f.Name] {
					t.Errorf("%s returns %s.%s (via %s)", name, ty.Name(), f.Name, path)
				}
				walk(path+"."+f.Name, f.Type)
			}
		}
		for i := 0; i < m.Type.NumOut(); i++ {
			walk(name, m.Type.Out(i))
		}
	}
}
