//go:build unix

package cputime

import "syscall"

// now returns the user and system time of the process in nanoseconds.
func now() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
