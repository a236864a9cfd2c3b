//go:build js || wasip1

package jsonschema

// oNonblock is 0 where the system has no named pipes to wait on.
const oNonblock = 0
