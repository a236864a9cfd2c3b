package jsonptr

import "testing"

func TestEscapeRoundTrips(t *testing.T) {
	for key, token := range map[string]string{"": "", "a": "a", "a/b": "a~1b", "m~n": "m~0n", "~1": "~01", "/~/": "~1~0~1", "~01": "~001"} {
		if got := Escape(key); got != token {
			t.Errorf("Escape(%q) = %q, want %q", key, got, token)
		}
		if got := Unescape(token); got != key {
			t.Errorf("Unescape(%q) = %q, want %q", token, got, key)
		}
	}
}
