package jsonkind

import (
	"reflect"
	"testing"
)

func TestOf(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{struct{}{}, "a JSON object"},
		{map[string]int{}, "a JSON object"},
		{[]int{}, "a JSON array"},
		{"", "a JSON string"},
		{false, "true or false"},
		{uint8(0), "an integer"},
		{int64(0), "an integer"},
		{0.5, "a number"},
		{new(int), "an integer"},
		{make(chan int, 1), "other JSON"},
	} {
		if got := Of(reflect.TypeOf(c.v)); got != c.want {
			t.Errorf("Of(%T) = %q, want %q", c.v, got, c.want)
		}
	}
}
