// Package fnv: a small hash step the compiler inlines into its callers in package main, so
// the test programs have inlined frames from another package and file.
package fnv

const prime = 1099511628211

// Mix folds v into h (FNV-1a step); small enough to be inlined.
func Mix(h, v uint64) uint64 {
	h ^= v
	h *= prime
	return rotate(h)
}

func rotate(h uint64) uint64 {
	return h<<7 | h>>57
}
