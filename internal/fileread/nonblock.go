//go:build !js && !wasip1

package fileread

import "syscall"

// oNonblock opens a file without waiting: a named pipe without a writer
// would block its reader's open.
const oNonblock = syscall.O_NONBLOCK
