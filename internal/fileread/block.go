//go:build js || wasip1

package fileread

// oNonblock is 0 where there are no named pipes to wait on.
const oNonblock = 0
