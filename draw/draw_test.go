package draw_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/asyncevent/asyncevent/draw"
)

// Order is every entry once, by score, whatever order the entries come in; its first
// k are the draw's k winners; another seed, or another entry set, gives another order.
func TestOrder(t *testing.T) {
	seed := []byte("a seed of thirty-two bytes, hex'd")
	var ids []string
	for i := range 200 {
		ids = append(ids, fmt.Sprintf("req-%03d", i))
	}
	order := draw.Order(seed, ids)
	assert.ElementsMatch(t, ids, order)
	for _, k := range []int{1, 7, 200} {
		assert.Equal(t, draw.Winners(seed, ids, k), order[:k], "k = %d", k)
	}
	reversed := slices.Clone(ids)
	slices.Reverse(reversed)
	assert.Equal(t, order, draw.Order(seed, reversed), "the entries' order does not matter")
	assert.NotEqual(t, order, draw.Order([]byte("another seed"), ids))
	fewer := draw.Order(seed, ids[1:])
	assert.NotEqual(t, slices.DeleteFunc(slices.Clone(order), func(id string) bool { return id == ids[0] }), fewer,
		"the entries hash binds every score: one entry less reorders the rest")
	assert.Empty(t, draw.Order(seed, nil))
}

func ExampleOrder() {
	seed := []byte("the seed revealed at the start")
	fmt.Println(draw.Order(seed, []string{"req-a", "req-b", "req-c", "req-d"}))
	// Output: [req-b req-c req-d req-a]
}
